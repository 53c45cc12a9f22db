//! OpenSM's objects, wrapped once. Everything the adapter reads from the subnet or writes into a
//! switch goes through the small types here, so that [`super::subnet`] and [`super::tables`] are
//! safe code.
//!
//! The one promise all of them rest on is OpenSM's lock: OpenSM calls `build_lid_matrices` and
//! `ucast_build_fwd_tables` from `ucast_mgr_route` with `p_lock` held for writing, so for as long
//! as a [`LockedSubnet`] lives, no OpenSM thread adds, frees or changes a node, port or switch.
//! Creating a [`LockedSubnet`] is the only `unsafe` step (the caller vouches for the lock); every
//! object handed out borrows from it and cannot outlive the callback.

use std::ffi::CStr;
use std::marker::PhantomData;
use std::path::PathBuf;

use super::ffi;
use crate::fabric::NodeKind;

/// The table sizes of one OpenSM switch, as `osm_switch_prepare_path_rebuild` left them for this
/// routing run: what every write must stay within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SwitchLimits {
    /// LIDs `0..=max_lid_ho` have `new_lft` entries.
    pub max_lid_ho: u16,
    /// `sw->num_ports`: physical ports + port 0; valid LFT ports are `0..num_ports`.
    pub num_ports: u8,
    /// Bytes allocated for `new_lft`.
    pub lft_size: u16,
    /// Rows allocated for `hops`.
    pub num_hops: u16,
}

/// OpenSM's subnet, read while OpenSM holds its lock.
pub(crate) struct LockedSubnet<'a> {
    subn: &'a ffi::osm_subn_t,
}

/// The options of OpenSM the engines read.
pub(crate) struct Options {
    pub qos: bool,
    pub lmc: u8,
    /// `avoid_throttled_links`, and whether `fdr10` is on (1) for judging them.
    pub avoid_throttled_links: bool,
    pub fdr10: bool,
    pub dump_dir: Option<PathBuf>,
    /// The configuration file OpenSM read (`-F`, or its default).
    pub config_file: Option<PathBuf>,
    /// `event_plugin_options`.
    pub plugin_options: Option<String>,
    /// OpenSM's options that bear on routing, as `name value`, for the log
    /// ([`super::subnet::option_verdicts`]).
    pub routing_options: Vec<(&'static str, String)>,
}

impl<'a> LockedSubnet<'a> {
    /// # Safety
    /// `osm` must be the running OpenSM, and OpenSM's lock must be held for all of `'a` (as
    /// during the routing callbacks). No other `LockedSubnet` may exist meanwhile: the handles on
    /// switch tables are kept distinct by borrowing this one mutably.
    pub(crate) unsafe fn new(osm: *mut ffi::osm_opensm_t) -> Self {
        LockedSubnet {
            // SAFETY: the caller vouches that `osm` is live and nothing changes it during 'a.
            subn: unsafe { &(*osm).subn },
        }
    }

    /// Every node of OpenSM's node table.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = Node<'a>> + 'a {
        // SAFETY: the node table's items are the first field of live `osm_node_t`s (lock held).
        qmap(&self.subn.node_guid_tbl).map(|item| Node(unsafe { &*item.cast::<ffi::osm_node_t>() }))
    }

    /// Every port of OpenSM's port table.
    pub(crate) fn ports(&self) -> impl Iterator<Item = Port<'a>> + 'a {
        // SAFETY: the port table's items are the first field of live `osm_port_t`s.
        qmap(&self.subn.port_guid_tbl).map(|item| Port(unsafe { &*item.cast::<ffi::osm_port_t>() }))
    }

    /// Whether this is this SM's first sweep as master while another SM is or was about: it
    /// came out of standby (the master died, or handed over), or it found another SM while
    /// discovering (a master that handed over before discovery ended: OpenSM then goes from
    /// discovering to master directly). The switches may then hold another SM's routing.
    pub(crate) fn took_over(&self) -> bool {
        // SAFETY: a live, initialised qmap (lock held); the helper only reads its count.
        let other_sms = unsafe { ffi::cl_qmap_count(&self.subn.sm_guid_tbl) };
        self.subn.first_time_master_sweep != 0
            && (self.subn.coming_out_of_standby != 0 || other_sms > 0)
    }

    /// Switches in OpenSM's switch table.
    pub(crate) fn switch_count(&self) -> usize {
        // SAFETY: a live, initialised qmap (lock held); the helper only reads its count.
        unsafe { ffi::cl_qmap_count(&self.subn.sw_guid_tbl) as usize }
    }

    pub(crate) fn options(&self) -> Options {
        let opt = &self.subn.opt;
        let text = |p: *const std::ffi::c_char| {
            // SAFETY: OpenSM keeps its options' strings NUL-terminated and alive (or null).
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        Options {
            qos: opt.qos != 0,
            lmc: opt.lmc,
            avoid_throttled_links: opt.avoid_throttled_links != 0,
            fdr10: opt.fdr10 == 1,
            dump_dir: text(opt.dump_files_dir).map(PathBuf::from),
            config_file: text(opt.config_file).map(PathBuf::from),
            plugin_options: text(opt.event_plugin_options),
            routing_options: {
                let flag = |b: ffi::boolean_t| if b != 0 { "TRUE" } else { "FALSE" }.to_string();
                let mut v = vec![
                    ("lmc", opt.lmc.to_string()),
                    ("lmc_esp0", flag(opt.lmc_esp0)),
                    ("max_op_vls", opt.max_op_vls.to_string()),
                    ("qos", flag(opt.qos)),
                    ("sm_sl", opt.sm_sl.to_string()),
                    ("avoid_throttled_links", flag(opt.avoid_throttled_links)),
                    ("use_ucast_cache", flag(opt.use_ucast_cache)),
                    ("use_optimized_slvl", flag(opt.use_optimized_slvl)),
                    ("port_shifting", flag(opt.port_shifting)),
                    ("scatter_ports", opt.scatter_ports.to_string()),
                ];
                for (name, p) in [
                    ("root_guid_file", opt.root_guid_file),
                    ("cn_guid_file", opt.cn_guid_file),
                    ("io_guid_file", opt.io_guid_file),
                    ("ids_guid_file", opt.ids_guid_file),
                    ("guid_routing_order_file", opt.guid_routing_order_file),
                ] {
                    if let Some(f) = text(p) {
                        v.push((name, f));
                    }
                }
                v
            },
        }
    }

    /// What OpenSM records each switch holds (`lft`, as uploaded or read back), by node GUID:
    /// `lft_size` ports per switch, one per LID from 0.
    pub(crate) fn current_lfts(&self) -> Vec<(u64, Vec<u8>)> {
        qmap(&self.subn.sw_guid_tbl)
            .filter_map(|item| {
                // SAFETY: the switch table's items are the first field of live `osm_switch_t`s;
                // `lft` holds `lft_size` bytes or is null (lock held).
                let sw = unsafe { &*item.cast::<ffi::osm_switch_t>() };
                // SAFETY: as above, the switch's node is live.
                let node = unsafe { sw.p_node.as_ref() }?;
                let lft = (!sw.lft.is_null()).then(|| {
                    // SAFETY: see above.
                    unsafe { std::slice::from_raw_parts(sw.lft, usize::from(sw.lft_size)) }
                })?;
                Some((Node(node).guid(), lft.to_vec()))
            })
            .collect()
    }

    /// The tables of the switches with node GUIDs `guids`, one handle each, in that order, to
    /// write them (in parallel: the handles are of distinct switches). Fails at the first GUID
    /// OpenSM has no switch for, or one whose switch is in the batch already.
    ///
    /// The handles borrow the subnet mutably: while they live, no other handle on any switch
    /// (another batch, a [`McastTable`]) can be made, so no two views of one switch's tables
    /// coexist.
    pub(crate) fn switch_tables(
        &mut self,
        api: &ffi::Api,
        guids: impl IntoIterator<Item = u64>,
    ) -> Result<Vec<SwitchTables<'_>>, SwitchLookupError> {
        let guids = guids.into_iter();
        let mut handles: Vec<SwitchTables<'_>> = Vec::with_capacity(guids.size_hint().0);
        let mut seen = std::collections::HashSet::with_capacity(guids.size_hint().0);
        for guid in guids {
            let sw = self.find_switch(api, guid);
            if sw.is_null() {
                return Err(SwitchLookupError::Missing(guid));
            }
            if !seen.insert(sw as usize) {
                return Err(SwitchLookupError::Twice(guid));
            }
            // SAFETY: a non-null result is a live switch; only the routing callbacks write its
            // new_lft and hops while the lock is held; `seen` makes this the batch's only
            // handle on it, and `&mut self` the only batch.
            handles.push(unsafe { SwitchTables::new(sw) });
        }
        Ok(handles)
    }

    /// OpenSM's switch object of node GUID `guid` (null when it has none).
    fn find_switch(&self, api: &ffi::Api, guid: u64) -> *mut ffi::osm_switch_t {
        // SAFETY: OpenSM's lookup over its own switch table; the subnet is live (lock held).
        unsafe { (api.get_switch_by_guid)(self.subn, guid.to_be()) }
    }
}

/// Why [`LockedSubnet::switch_tables`] handed out no batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SwitchLookupError {
    /// OpenSM has no switch of this node GUID.
    Missing(u64),
    /// The GUID's switch is in the batch already.
    Twice(u64),
}

/// The items of a `cl_qmap_t`, in key order.
pub(crate) fn qmap<'a>(
    map: &'a ffi::cl_qmap_t,
) -> impl Iterator<Item = *const ffi::cl_map_item_t> + 'a {
    // SAFETY: a live, initialised map that nobody modifies while the lock is held.
    let (mut cur, end) = unsafe { (ffi::cl_qmap_head(map).cast_const(), ffi::cl_qmap_end(map)) };
    std::iter::from_fn(move || {
        if cur == end || cur.is_null() {
            return None;
        }
        let item = cur;
        // SAFETY: `item` is a live item of the map.
        cur = unsafe { ffi::cl_qmap_next(item) };
        Some(item)
    })
}

/// An OpenSM node (`osm_node_t`).
#[derive(Clone, Copy)]
pub(crate) struct Node<'a>(&'a ffi::osm_node_t);

impl<'a> Node<'a> {
    /// Identity of the node object, to match ports with nodes.
    pub(crate) fn id(&self) -> usize {
        std::ptr::from_ref(self.0) as usize
    }

    pub(crate) fn kind(&self) -> Option<NodeKind> {
        // SAFETY: a live node; the helper reads its NodeInfo.
        match u32::from(unsafe { ffi::osm_node_get_type(self.0) }) {
            ffi::IB_NODE_TYPE_SWITCH => Some(NodeKind::Switch),
            ffi::IB_NODE_TYPE_CA => Some(NodeKind::Ca),
            ffi::IB_NODE_TYPE_ROUTER => Some(NodeKind::Router),
            _ => None,
        }
    }

    pub(crate) fn guid(&self) -> u64 {
        // SAFETY: a live node; the helper reads its NodeInfo.
        u64::from_be(unsafe { ffi::osm_node_get_node_guid(self.0) })
    }

    pub(crate) fn num_ports(&self) -> u8 {
        self.0.node_info.num_ports
    }

    pub(crate) fn description(&self) -> String {
        description(&self.0.node_desc.description)
    }

    /// A switch's table sizes for this routing run (`None` for CAs, routers, and a switch
    /// OpenSM has no switch object for).
    pub(crate) fn switch_limits(&self) -> Option<SwitchLimits> {
        // SAFETY: `sw` is null or the node's live switch object.
        let sw = unsafe { self.0.sw.as_ref() }?;
        Some(limits_of(sw))
    }

    /// Physical port `port` (1..), when OpenSM has a valid one there.
    pub(crate) fn physp(&self, port: u8) -> Option<Physp<'a>> {
        if u32::from(port) >= self.0.physp_tbl_size {
            return None;
        }
        // SAFETY: port < physp_tbl_size; the helper indexes the node's port array (it takes a
        // mutable pointer but only computes an address).
        let p = unsafe {
            ffi::osm_node_get_physp_ptr(std::ptr::from_ref(self.0).cast_mut(), port.into())
        };
        // SAFETY: null or a port of this live node.
        Physp::checked(unsafe { p.as_ref() })
    }

    /// Ports the node's port array holds (port 0 included), at most 256.
    pub(crate) fn port_slots(&self) -> u16 {
        self.0.physp_tbl_size.min(256) as u16
    }
}

/// Node description as text: the 64 bytes up to the first NUL, trimmed.
pub(crate) fn description(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).trim().to_string()
}

/// An OpenSM physical port (`osm_physp_t`) that is valid and belongs to a node.
#[derive(Clone, Copy)]
pub(crate) struct Physp<'a>(&'a ffi::osm_physp_t);

impl<'a> Physp<'a> {
    fn checked(p: Option<&'a ffi::osm_physp_t>) -> Option<Self> {
        // SAFETY: a live port; the helper reads its fields.
        p.filter(|p| unsafe { ffi::osm_physp_is_valid(*p) } != 0 && !p.p_node.is_null())
            .map(Physp)
    }

    /// Wraps a port OpenSM hands to a callback.
    ///
    /// # Safety
    /// `p` must be null or a live `osm_physp_t` for the duration of `'a`.
    pub(crate) unsafe fn from_callback(p: *const ffi::osm_physp_t) -> Option<Self> {
        // SAFETY: as the caller vouches.
        Self::checked(unsafe { p.as_ref() })
    }

    pub(crate) fn port_num(&self) -> u8 {
        self.0.port_num
    }

    /// Identity of the node the port belongs to (as [`Node::id`]).
    pub(crate) fn node_id(&self) -> usize {
        self.0.p_node as usize
    }

    /// GUID of the node the port belongs to.
    pub(crate) fn node_guid(&self) -> u64 {
        // SAFETY: p_node is non-null (checked) and a live node.
        u64::from_be(unsafe { ffi::osm_node_get_node_guid(self.0.p_node) })
    }

    /// The port at the other end of the cable, when there is a valid one.
    pub(crate) fn remote(&self) -> Option<Physp<'a>> {
        // SAFETY: null or a live port of another node (OpenSM links them both ways).
        Self::checked(unsafe { self.0.p_remote_physp.as_ref() })
    }

    /// Port state INIT or better.
    pub(crate) fn is_up(&self) -> bool {
        // SAFETY: reads the port's PortInfo.
        unsafe { ffi::ib_port_info_get_port_state(&self.0.port_info) >= ffi::IB_LINK_INIT as u8 }
    }

    /// The PortInfo OperationalVLs code.
    pub(crate) fn op_vls_code(&self) -> u8 {
        // SAFETY: reads the port's PortInfo.
        unsafe { ffi::ib_port_info_get_op_vls(&self.0.port_info) }
    }

    /// Whether the link runs below the speed or width both ends enable (`osm_link_is_throttled`,
    /// as stock dfsssp asks it; `fdr10`: OpenSM's `fdr10` option is 1).
    pub(crate) fn link_is_throttled(&self, api: &ffi::Api, fdr10: bool) -> bool {
        // SAFETY: OpenSM's function over a live port; it only reads the port and its peer
        // (the pointer is `*mut` in its signature only).
        unsafe { (api.link_is_throttled)(std::ptr::from_ref(self.0).cast_mut(), fdr10.into()) != 0 }
    }

    /// OpenSM's own judgement of the link (`osm_link_is_healthy`).
    pub(crate) fn link_is_healthy(&self, api: &ffi::Api) -> bool {
        // SAFETY: OpenSM's function over a live port.
        unsafe { (api.link_is_healthy)(self.0) != 0 }
    }
}

/// An OpenSM port object (`osm_port_t`, the LID-bearing view of a physical port).
#[derive(Clone, Copy)]
pub(crate) struct Port<'a>(&'a ffi::osm_port_t);

impl<'a> Port<'a> {
    pub(crate) fn physp(&self) -> Option<Physp<'a>> {
        // SAFETY: null or the port's live physical port.
        Physp::checked(unsafe { self.0.p_physp.as_ref() })
    }

    /// Identity of the node the port belongs to (as [`Node::id`]).
    pub(crate) fn node_id(&self) -> usize {
        self.0.p_node as usize
    }

    pub(crate) fn base_lid(&self) -> u16 {
        // SAFETY: the helper reads the port's PortInfo through its physical port.
        u16::from_be(unsafe { ffi::osm_port_get_base_lid(self.0) })
    }

    pub(crate) fn lmc(&self) -> u8 {
        // SAFETY: as for base_lid.
        unsafe { ffi::osm_port_get_lmc(self.0) }
    }

    pub(crate) fn guid(&self) -> u64 {
        // SAFETY: the helper reads the port's GUID.
        u64::from_be(unsafe { ffi::osm_port_get_guid(self.0) })
    }
}

fn limits_of(sw: &ffi::osm_switch_t) -> SwitchLimits {
    SwitchLimits {
        max_lid_ho: sw.max_lid_ho,
        num_ports: sw.num_ports,
        lft_size: sw.lft_size,
        num_hops: sw.num_hops,
    }
}

/// The tables of one OpenSM switch that routing fills: `new_lft` and the hop matrix.
pub(crate) struct SwitchTables<'a> {
    sw: *mut ffi::osm_switch_t,
    limits: SwitchLimits,
    _lock: PhantomData<&'a mut ffi::osm_switch_t>,
}

// SAFETY: a handle is the only view of its switch's new_lft and hop rows (a batch holds one
// handle per switch and borrows the subnet mutably, see `LockedSubnet::switch_tables`), so moving
// it to another thread shares nothing; it cannot outlive the callback whose thread holds OpenSM's
// lock, and the rows it allocates with malloc may be freed by OpenSM from any thread.
unsafe impl Send for SwitchTables<'_> {}

/// `malloc` failed for a hop row.
#[derive(Debug)]
pub(crate) struct OutOfMemory;

impl SwitchTables<'_> {
    /// # Safety
    /// `sw` must be a live switch that nothing else reads or writes while this handle lives.
    unsafe fn new(sw: *mut ffi::osm_switch_t) -> Self {
        // SAFETY: as the caller vouches.
        let limits = limits_of(unsafe { &*sw });
        SwitchTables {
            sw,
            limits,
            _lock: PhantomData,
        }
    }

    pub(crate) fn limits(&self) -> SwitchLimits {
        self.limits
    }

    /// Whether OpenSM allocated both tables (`osm_switch_prepare_path_rebuild` ran).
    pub(crate) fn is_prepared(&self) -> bool {
        // SAFETY: a live switch (see `new`).
        let sw = unsafe { &*self.sw };
        !sw.new_lft.is_null() && !sw.hops.is_null()
    }

    /// `new_lft`, all `lft_size` bytes of it.
    pub(crate) fn new_lft(&mut self) -> Option<&mut [u8]> {
        // SAFETY: a live switch whose new_lft holds lft_size bytes (OpenSM allocates it so);
        // `&mut self` makes this the only view of it.
        unsafe {
            let lft = (*self.sw).new_lft;
            (!lft.is_null())
                .then(|| std::slice::from_raw_parts_mut(lft, usize::from(self.limits.lft_size)))
        }
    }

    /// Stores the hop row of `lid` (one byte per port, `num_ports` of them), allocating it with
    /// the process's `malloc` where OpenSM has none yet, as `osm_switch_set_hops` does and
    /// `osm_switch_delete` expects. `fail` (a test hook) acts as if `malloc` had failed.
    pub(crate) fn set_hop_row(
        &mut self,
        lid: u16,
        row: &[u8],
        fail: bool,
    ) -> Result<(), OutOfMemory> {
        let np = usize::from(self.limits.num_ports);
        assert!(
            lid < self.limits.num_hops && row.len() == np && self.is_prepared(),
            "hop row outside the switch's tables"
        );
        // SAFETY: lid < num_hops, so the slot exists in the live `hops` array; a row holds
        // num_ports bytes (OpenSM allocates them so too); `&mut self` is the only view.
        unsafe {
            let slot = (*self.sw).hops.add(usize::from(lid));
            if (*slot).is_null() {
                let mem = if fail {
                    std::ptr::null_mut()
                } else {
                    libc::malloc(np).cast::<u8>()
                };
                if mem.is_null() {
                    return Err(OutOfMemory);
                }
                *slot = mem;
            }
            std::ptr::copy_nonoverlapping(row.as_ptr(), *slot, np);
        }
        Ok(())
    }

    /// Every `new_lft` entry back to OSM_NO_PATH and the hop counts cleared (rows stay
    /// allocated, as `osm_switch_prepare_path_rebuild` leaves them).
    pub(crate) fn reset(&mut self, api: &ffi::Api, no_path: u8) {
        if let Some(lft) = self.new_lft() {
            lft.fill(no_path);
        }
        // SAFETY: OpenSM's function over its live switch.
        unsafe { (api.switch_clear_hops)(self.sw) };
    }
}

/// A helper thread that runs only when a core would otherwise idle (`SCHED_IDLE`), so its work
/// never slows the threads that compute the routing, until a thread about to wait for it raises
/// it back to normal scheduling: on a busy SM host the kernel may starve an idle-priority
/// thread, and none may be waited on.
#[derive(Default)]
pub(crate) struct IdleHelper {
    /// The helper's `pthread_t` once it started (valid until it is joined), 0 before.
    thread: std::sync::atomic::AtomicU64,
    raised: std::sync::atomic::AtomicBool,
}

impl IdleHelper {
    /// On the helper thread: idle priority from now on, unless [`Self::raise`] came first.
    pub(crate) fn enter(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        self.thread.store(me as u64, SeqCst);
        set_policy(me, libc::SCHED_IDLE);
        // A raise between the store and the line above found the thread and raised it, and
        // was undone: raise again. (Sequentially consistent: either this load sees the flag,
        // or `raise` saw the thread after the store.)
        if self.raised.load(SeqCst) {
            set_policy(me, libc::SCHED_OTHER);
        }
    }

    /// On another thread, before waiting for the helper: normal scheduling for it. The helper
    /// must not have been joined yet (its `pthread_t` is valid until then).
    pub(crate) fn raise(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.raised.store(true, SeqCst);
        let t = self.thread.load(SeqCst);
        if t != 0 {
            set_policy(t as libc::pthread_t, libc::SCHED_OTHER);
        }
    }
}

/// Sets a live (not yet joined) thread's scheduling policy, priority 0; whether it took effect.
fn set_policy(thread: libc::pthread_t, policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `thread` is a thread of this process that has not been joined (the callers'
    // contract), so its handle is valid; `param` is a valid parameter block (priority 0, as
    // SCHED_IDLE and SCHED_OTHER require) that outlives the call.
    unsafe { libc::pthread_setschedparam(thread, policy, &param) == 0 }
}

/// A multicast group box (`osm_mgrp_box_t`) OpenSM hands to `mcast_build_stree`: one MLID and the
/// groups (MGIDs) that share it, with their member ports.
#[derive(Clone, Copy)]
pub(crate) struct McastBox<'a>(&'a ffi::osm_mgrp_box_t);

/// One multicast group (`osm_mgrp_t`) of a box.
#[derive(Clone, Copy)]
pub(crate) struct McastGroup<'a>(&'a ffi::osm_mgrp_t);

impl<'a> McastBox<'a> {
    /// Wraps the box OpenSM hands to `mcast_build_stree`.
    ///
    /// # Safety
    /// `p` must be null or a live box, and OpenSM's lock must be held for all of `'a` (the
    /// multicast manager holds it exclusively while it builds trees).
    pub(crate) unsafe fn from_callback(p: *const ffi::osm_mgrp_box_t) -> Option<Self> {
        // SAFETY: as the caller vouches.
        unsafe { p.as_ref() }.map(McastBox)
    }

    /// The MLID, host order (the box keeps it so).
    pub(crate) fn mlid(&self) -> u16 {
        self.0.mlid
    }

    /// The groups sharing the MLID.
    pub(crate) fn groups(&self) -> impl Iterator<Item = McastGroup<'a>> + 'a {
        let list = &self.0.mgrp_list;
        let offset = std::mem::offset_of!(ffi::osm_mgrp_t, list_item);
        // SAFETY: a live, initialised list (lock held); its items are the `list_item` fields of
        // live groups, so stepping back by the field's offset gives the group.
        let (mut cur, end) = unsafe { (ffi::cl_qlist_head(list), ffi::cl_qlist_end(list)) };
        std::iter::from_fn(move || {
            if cur.is_null() || std::ptr::eq(cur, end) {
                return None;
            }
            let item = cur;
            // SAFETY: `item` is a live item of the list.
            cur = unsafe { ffi::cl_qlist_next(item) };
            // SAFETY: see above: `item` sits `offset` bytes into a live osm_mgrp_t.
            Some(McastGroup(unsafe {
                &*item.cast::<u8>().sub(offset).cast::<ffi::osm_mgrp_t>()
            }))
        })
    }
}

impl<'a> McastGroup<'a> {
    /// The group's SL (its MCMemberRecord's SL_FlowLabel_HopLimit, top four bits).
    pub(crate) fn sl(&self) -> u8 {
        (u32::from_be(self.0.mcmember_rec.sl_flow_hop) >> 28) as u8
    }

    /// The member ports (full and send-only alike: OpenSM's trees hold them all).
    pub(crate) fn ports(&self) -> impl Iterator<Item = Port<'a>> + 'a {
        // SAFETY: the member table's items are the first field of live `osm_mcm_port_t`s, each
        // pointing at a live port (lock held).
        qmap(&self.0.mcm_port_tbl).filter_map(|item| unsafe {
            let mcm = &*item.cast::<ffi::osm_mcm_port_t>();
            mcm.port.as_ref().map(Port)
        })
    }
}

impl LockedSubnet<'_> {
    /// The multicast forwarding table of the switch with node GUID `guid`. The handle borrows
    /// the subnet mutably: while it lives, no other handle on any switch can be made.
    pub(crate) fn mcast_table(&mut self, api: &ffi::Api, guid: u64) -> Option<McastTable<'_>> {
        let sw = self.find_switch(api, guid);
        if sw.is_null() {
            return None;
        }
        // SAFETY: a non-null result is a live switch whose table only the multicast manager
        // (which is calling us, lock held) touches meanwhile; `&mut self` makes this handle the
        // only one. Only the field's address is taken: no reference to the switch outlives this.
        let (tbl, num_ports) =
            unsafe { (std::ptr::addr_of_mut!((*sw).mcast_tbl), (*sw).num_ports) };
        Some(McastTable {
            tbl,
            num_ports,
            _lock: PhantomData,
        })
    }
}

/// One switch's multicast forwarding table (`osm_mcast_tbl_t`).
pub(crate) struct McastTable<'a> {
    /// Held as a pointer, read and written only for the length of a call, so that the
    /// read-only views of nodes (which may look at their switch object) never overlap a live
    /// `&mut` of its table.
    tbl: *mut ffi::osm_mcast_tbl_t,
    num_ports: u8,
    _lock: PhantomData<&'a mut ffi::osm_mcast_tbl_t>,
}

/// Why an MFT entry cannot be set.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum McastTableError {
    /// OpenSM allocated no room for this MLID (`max_mlid_ho`, `mft_depth`).
    NoRoom { mlid: u16, max_mlid: u16 },
    /// The port is not one of the switch's.
    NoPort { port: u8, num_ports: u8 },
}

impl McastTable<'_> {
    /// Adds `port` to the MLID's port mask, as OpenSM's own tree builders do.
    pub(crate) fn set(
        &mut self,
        api: &ffi::Api,
        mlid: u16,
        port: u8,
    ) -> Result<(), McastTableError> {
        const MCAST_START: u16 = 0xC000;
        // SAFETY: a live table (see `LockedSubnet::mcast_table`), read for this check only.
        let t = unsafe { &*self.tbl };
        let room = !t.p_mask_tbl.is_null()
            && mlid >= MCAST_START
            && mlid <= t.max_mlid_ho
            && mlid - MCAST_START < t.mft_depth;
        if !room {
            return Err(McastTableError::NoRoom {
                mlid,
                max_mlid: t.max_mlid_ho,
            });
        }
        if port >= self.num_ports {
            return Err(McastTableError::NoPort {
                port,
                num_ports: self.num_ports,
            });
        }
        // SAFETY: OpenSM's function over the live table; the MLID is within the rows OpenSM
        // allocated (checked above) and the port within the switch's (a mask row holds all
        // positions of IB_MCAST_POSITION_MAX, 16 ports each, up to port 255).
        unsafe { (api.mcast_tbl_set)(self.tbl, mlid, port) };
        Ok(())
    }

    /// Clears the MLID's port mask (nothing set for it on this switch).
    pub(crate) fn clear(&mut self, api: &ffi::Api, mlid: u16) {
        // SAFETY: a live table (see `LockedSubnet::mcast_table`), read for this check only.
        let t = unsafe { &*self.tbl };
        if t.p_mask_tbl.is_null() || mlid < 0xC000 || mlid - 0xC000 >= t.mft_depth {
            return;
        }
        // SAFETY: OpenSM's function over the live table, an MLID within its allocated rows.
        unsafe { (api.mcast_tbl_clear_mlid)(self.tbl, mlid) };
    }
}

impl<'a> LockedSubnet<'a> {
    /// Every multicast group box OpenSM has (one per MLID in use), by MLID.
    pub(crate) fn mcast_boxes(&self) -> impl Iterator<Item = McastBox<'a>> + 'a {
        // SAFETY: `mboxes` holds null or live boxes (lock held), indexed by MLID - 0xC000.
        self.subn
            .mboxes
            .iter()
            .filter_map(|&p| unsafe { p.cast::<ffi::osm_mgrp_box_t>().as_ref() })
            .map(McastBox)
    }
}

/// Hands the memory the routing freed back to the system: the plug-in's own heap's
/// ([`super::heap::trim`]) and glibc's free pages (the hop rows OpenSM frees, what C libraries
/// allocate). OpenSM's own peak comes after the routing, when it queues the LFT blocks for
/// upload; without this, the routing's freed working memory stays resident beneath it.
pub(crate) fn release_free_heap() {
    super::heap::trim();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: glibc's malloc_trim only walks its own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Caps glibc's malloc arenas at one for the opensm process, unless the admin set
/// `MALLOC_ARENA_MAX` (glibc reads it first). The plug-in's Rust allocations come from its own
/// heap ([`super::heap`]), but its threads still call malloc (the LID-matrix helper allocates
/// the hop rows that OpenSM frees; C libraries allocate), and with an arena per such thread
/// each would keep a fragmented arena beside OpenSM's. OpenSM's own threads allocated from a
/// single arena before glibc 2.10.
pub(crate) fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a parameter of glibc's allocator, under its own lock.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}
