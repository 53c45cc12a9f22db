//! Reading the switches' linear forwarding tables back into OpenSM's record of what each switch
//! holds (`osm_switch_t::lft`), so that an SM that became master without the previous master's
//! state file can continue from the routing the fabric runs on (issue 36).
//!
//! Stock OpenSM never reads LFTs back (the request in `osm_sw_info_rcv.c` is compiled out), but
//! its receiver for LinearForwardingTable answers (`osm_lft_rcv_process`) stores every block it
//! gets into the switch's current table. So the plug-in asks through OpenSM's own request path
//! (`osm_req_get`, one Get per block up to the switch's LinearFDBTop, sent at OpenSM's
//! `max_wire_smps`), and waits for the answers. The receiver takes OpenSM's lock, which OpenSM
//! holds for the whole routing callback: the lock is therefore released while the answers come
//! in and taken back before the callback goes on. In that window OpenSM's state manager is in
//! this callback (no sweep runs); other threads (SA queries, traps) take the lock as they do
//! between sweep steps. Nothing of the subnet may be borrowed across the call.

use std::time::{Duration, Instant};

use super::ffi;
use super::raw::qmap;

/// LinearForwardingTable's attribute ID (IBA 14.2.5.10).
const ATTR_LIN_FWD_TBL: u16 = 0x0019;
/// LIDs per LFT block.
const BLOCK_LIDS: usize = 64;
/// `CL_DISP_MSGID_NONE`: no message to post when a request fails.
const NO_FAIL_MESSAGE: u32 = 0xFFFF_FFFF;

/// What reading the tables back took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReadBack {
    pub switches: usize,
    /// Blocks asked for, and requests OpenSM refused to send.
    pub blocks: usize,
    pub refused: usize,
}

/// Asks every switch for its LFT blocks and waits (at most `limit`) until OpenSM has no SMP
/// outstanding, i.e. every answer is stored in the switches' current tables or timed out.
///
/// # Safety
/// `osm` must be the running OpenSM and this thread inside one of its routing callbacks, holding
/// OpenSM's lock (`sm.p_lock`) for writing as `ucast_mgr_route` does. No view of the subnet
/// ([`super::raw::LockedSubnet`] or anything borrowed from it) may live across this call: the lock
/// is released meanwhile. It is held again when this returns, whatever the outcome.
pub(crate) unsafe fn read_back_lfts(
    osm: *mut ffi::osm_opensm_t,
    api: &ffi::Api,
    limit: Duration,
) -> Result<ReadBack, String> {
    // SAFETY: (all of this function) `osm` is live; its switch table and the switches' nodes
    // and ports do not change while the lock is held, and the requests are queued before it is
    // released; `osm_req_get` copies the path and context it is given.
    unsafe {
        let sm = &raw mut (*osm).sm;
        let lock = (*sm).p_lock;
        let mut rb = ReadBack::default();
        for item in qmap(&(*osm).subn.sw_guid_tbl) {
            let sw = item.cast::<ffi::osm_switch_t>().cast_mut();
            let node = (*sw).p_node;
            // The blocks the switch says it uses, within what OpenSM keeps of its table.
            let stored = usize::from((*sw).lft_size) / BLOCK_LIDS;
            let in_use = usize::from(ffi::osm_switch_get_max_block_id_in_use(sw));
            let physp0 = ffi::osm_node_get_physp_ptr(node, 0);
            if stored == 0 || node.is_null() || physp0.is_null() {
                continue;
            }
            let path = ffi::osm_physp_get_dr_path_ptr(physp0);
            let mut ctx = ffi::osm_madw_context_t::default();
            ctx.lft_context = ffi::osm_lft_context_t {
                node_guid: ffi::osm_node_get_node_guid(node),
                set_method: 0,
            };
            rb.switches += 1;
            for block in 0..=in_use.min(stored - 1) {
                let status = (api.req_get)(
                    sm,
                    path,
                    ATTR_LIN_FWD_TBL.to_be(),
                    (block as u32).to_be(),
                    1,
                    0,
                    0,
                    NO_FAIL_MESSAGE,
                    &ctx,
                );
                rb.blocks += 1;
                rb.refused += usize::from(status != 0);
            }
        }
        let outstanding = &raw const (*osm).stats.qp0_mads_outstanding;
        ffi::cl_plock_release(lock);
        let t = Instant::now();
        let mut done = false;
        while t.elapsed() < limit {
            if std::ptr::read_volatile(outstanding) == 0 {
                done = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        ffi::cl_plock_excl_acquire(lock);
        match done {
            true => Ok(rb),
            false => Err(format!(
                "{} of {} LFT blocks still unanswered after {:.1} s",
                std::ptr::read_volatile(outstanding),
                rb.blocks,
                limit.as_secs_f64()
            )),
        }
    }
}
