//! QoS: the SLs the layers travel on (`layer_sls`), `path_sl` (the SL of a path's layer, or the
//! admin's hint outside the range) and `update_sl2vl` (SL i -> VL i for the layers' SLs).

use std::sync::atomic::Ordering;

use super::log::Code;
use super::raw::Physp;
use super::{ffi, sl, subnet, EngineCtx};
use crate::graph::NO_SWITCH;

/// The SLs of the layers: layer i travels on SL (and VL) `first + offset + i`, where the offset
/// is the engine's (SL `first` left to multicast). With a range given (`layer_sls`), OpenSM's SL
/// hint outside it is the admin's QoS policy and path_sl keeps it; without one, path_sl answers
/// the layer's SL for every path, as stock dfsssp does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SlRange {
    pub(super) first: u8,
    pub(super) range: Option<(u8, u8)>,
}

impl SlRange {
    /// Whether path_sl answers the layer's SL for OpenSM's hint `hint`: inside the range, or
    /// SL 0 (what OpenSM gives when neither a QoS level nor a partition sets one).
    fn routes(&self, hint: u8) -> bool {
        match self.range {
            None => true,
            Some((lo, hi)) => hint == 0 || (lo..=hi).contains(&hint),
        }
    }
}

impl EngineCtx {
    /// path_sl: the SL of the layer of the path from the switch where SLID's traffic enters to
    /// DLID. With `layer_sls` given, a hint outside it is the admin's QoS policy and is kept.
    pub(super) fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        let st = self.read();
        let Some(a) = &st.active else { return hint };
        let r = &a.routed;
        if r.routing.num_layers + a.base_sl() <= 1 || dlid > r.routing.lft.max_lid {
            return hint;
        }
        let (Some(src), Some(dst)) = (r.graph.dest_of_lid(slid), r.graph.dest_of_lid(dlid)) else {
            return hint;
        };
        if src.switch == NO_SWITCH || dst.switch == NO_SWITCH {
            return hint;
        }
        let name = self.kind.name();
        if !a.sls.routes(hint) {
            if a.hints_kept.fetch_or(1 << hint, Ordering::Relaxed) & (1 << hint) == 0 {
                self.log.info(&format!(
                    "{name}: SL {hint} from OpenSM's QoS policy is outside layer_sls: kept for \
                     the paths it is given to (their VL is the QoS policy's, outside the layers' \
                     deadlock analysis; logged once per SL)"
                ));
            }
            return hint;
        }
        let sl = r.routing.layer(src.switch, dlid) + a.base_sl();
        if hint != 0
            && hint != sl
            && a.hints_replaced.fetch_or(1 << hint, Ordering::Relaxed) & (1 << hint) == 0
        {
            self.log.info(&format!(
                "{name}: SL {hint} from OpenSM's QoS policy or partition replaced by the layers' \
                 SLs (set layer_sls to leave SLs to QoS; logged once per SL)"
            ));
        }
        sl
    }

    /// update_sl2vl: SL i -> VL i for every SL the layers use, in the table OpenSM is about to
    /// program on `port`; the admin's entries for other SLs stay.
    pub(super) fn update_sl2vl(
        &self,
        port: Option<Physp<'_>>,
        table: Option<&mut ffi::ib_slvl_table_t>,
    ) {
        let st = self.read();
        let Some(a) = &st.active else { return };
        // SLs first..first + offset + layers go to the VL of the same number (SL `first` alone
        // on its VL when a lane was left to multicast).
        let (first, count) = (
            a.sls.first,
            a.routed.routing.num_layers + a.routed.sl_offset,
        );
        let Some(table) = table else { return };
        if first + count <= 1 {
            return;
        }
        let before = table.raw_vl_by_sl;
        let mut after = before;
        let changed = sl::map_layers(&mut after, first, count);
        table.raw_vl_by_sl = after;
        let name = self.kind.name();
        let last = first + count - 1;
        if changed != 0 && !a.warned_admin_table.swap(true, Ordering::Relaxed) {
            self.log.info(&format!(
                "{name}: OpenSM's QoS SL-to-VL setting ({}) differs from the routing's layers; \
                 using SL i -> VL i for SL {first}..{last} as the deadlock analysis requires \
                 (logged once)",
                sl::describe(&before, changed),
            ));
        }
        let shared = sl::sharing_layer_vls(&after, first, count);
        if shared != 0 && !a.warned_shared_vl.swap(true, Ordering::Relaxed) {
            self.log.info(&format!(
                "{}: {name}: OpenSM's QoS SL-to-VL setting puts SLs outside the layers on the \
                 layers' VLs {first}..{last} ({}): traffic on them shares those VLs without being \
                 in the deadlock analysis; map them to other VLs (logged once)",
                Code::SharedVl,
                sl::describe(&after, shared),
            ));
        }
        let Some(port) = port else { return };
        let vls = subnet::data_vls(port.op_vls_code());
        if vls.is_some_and(|v| v <= last) && !a.warned_few_vls.swap(true, Ordering::Relaxed) {
            let guid = port.node_guid();
            self.log.error(&format!(
                "{name}: port {} of node 0x{guid:016x} operates {} data VLs but the routing's \
                 layers use VLs up to {last}: SLs beyond its VLs share a VL there and deadlock \
                 freedom is not guaranteed (logged once; rerouting picks up the new VL count)",
                port.port_num(),
                vls.unwrap_or(0),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opensm::{ctx_with_layers, State};

    #[test]
    fn path_sl_is_the_layer_of_the_source_switch() {
        let c = ctx_with_layers(true);
        assert_eq!(c.path_sl(7, 3, 4), 1, "CA on sw0 -> its switch's layer");
        assert_eq!(c.path_sl(7, 4, 3), 2, "CA on sw1");
        assert_eq!(c.path_sl(7, 2, 3), 2, "a switch LID is its own source");
        assert_eq!(c.path_sl(7, 3, 9), 7, "unknown DLID: the hint");
        assert_eq!(c.path_sl(7, 0, 4), 7, "unknown SLID: the hint");
        assert_eq!(
            ctx_with_layers(false).path_sl(5, 3, 4),
            5,
            "one layer: the hint"
        );
        // A lane left to multicast: every layer one SL up, a single layer included (SL 1, not
        // the hint, which would put unicast on multicast's VL 0).
        for layers in [true, false] {
            let c = ctx_with_layers(layers);
            if let Some(a) = c.write().active.as_mut() {
                a.routed.sl_offset = 1;
            }
            let want = if layers { 2 } else { 1 };
            assert_eq!(c.path_sl(7, 3, 4), want, "layers {layers}, offset 1");
        }
        *c.write() = State::default();
        assert_eq!(c.path_sl(6, 3, 4), 6, "no routing: the hint");
    }

    #[test]
    fn a_layer_sl_range_leaves_other_hints_to_qos() {
        let c = ctx_with_layers(true);
        if let Some(a) = c.write().active.as_mut() {
            a.sls = SlRange {
                first: 2,
                range: Some((2, 5)),
            };
        }
        // Layers 1 and 2 of the fixture on SLs 3 and 4; hints in the range or 0 get them.
        assert_eq!(c.path_sl(0, 3, 4), 3);
        assert_eq!(c.path_sl(5, 4, 3), 4);
        // A QoS level's SL outside the range is the admin's.
        assert_eq!(c.path_sl(9, 3, 4), 9);
        assert_eq!(c.path_sl(1, 3, 4), 1);
        // One layer, on SL 2: not the hint.
        let c = ctx_with_layers(false);
        if let Some(a) = c.write().active.as_mut() {
            a.sls = SlRange {
                first: 2,
                range: Some((2, 3)),
            };
        }
        assert_eq!(c.path_sl(0, 3, 4), 2);
        assert_eq!(c.path_sl(7, 3, 4), 7);
    }
}
