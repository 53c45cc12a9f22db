//! SL-to-VL tables (IBA 14.2.5.8, OpenSM's `ib_slvl_table_t`): 16 SLs, 4 bits each, two per byte,
//! the even SL in the high nibble.

/// Highest VL usable for data (VL15 is the management lane).
pub(crate) const MAX_DATA_VLS: u8 = 15;

pub(crate) fn get_vl(raw: &[u8; 8], sl: u8) -> u8 {
    let b = raw[usize::from(sl / 2)];
    if sl.is_multiple_of(2) {
        b >> 4
    } else {
        b & 0x0F
    }
}

pub(crate) fn set_vl(raw: &mut [u8; 8], sl: u8, vl: u8) {
    let i = usize::from(sl / 2);
    raw[i] = if sl.is_multiple_of(2) {
        (vl << 4) | (raw[i] & 0x0F)
    } else {
        (raw[i] & 0xF0) | (vl & 0x0F)
    };
}

/// Makes SL `i` use VL `i` for the `count` SLs from `first` (the layers', as the deadlock
/// analysis assumes). Returns a bit mask of the SLs the given table (OpenSM's QoS configuration)
/// mapped elsewhere.
pub(crate) fn map_layers(raw: &mut [u8; 8], first: u8, count: u8) -> u16 {
    let mut changed = 0u16;
    for sl in first..first.saturating_add(count).min(MAX_DATA_VLS) {
        if get_vl(raw, sl) != sl {
            changed |= 1 << sl;
            set_vl(raw, sl, sl);
        }
    }
    changed
}

/// The SLs outside `first..first + count` that the table puts on one of those VLs (the layers'),
/// as a bit mask: their traffic would share a layer's VL.
pub(crate) fn sharing_layer_vls(raw: &[u8; 8], first: u8, count: u8) -> u16 {
    let layers = first..first.saturating_add(count);
    (0..16u8)
        .filter(|sl| !layers.contains(sl) && layers.contains(&get_vl(raw, *sl)))
        .fold(0, |m, sl| m | (1 << sl))
}

/// "SL1->VL0, SL3->VL7" for the SLs in `mask` of the original table.
pub(crate) fn describe(raw: &[u8; 8], mask: u16) -> String {
    (0..16u8)
        .filter(|sl| mask & (1 << sl) != 0)
        .map(|sl| format!("SL{sl}->VL{}", get_vl(raw, sl)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nibble_layout_matches_ib_slvl_table_set() {
        let mut t = [0u8; 8];
        set_vl(&mut t, 0, 3);
        set_vl(&mut t, 1, 5);
        set_vl(&mut t, 15, 7);
        assert_eq!(t[0], 0x35);
        assert_eq!(t[7], 0x07);
        assert_eq!((get_vl(&t, 0), get_vl(&t, 1), get_vl(&t, 15)), (3, 5, 7));
    }

    #[test]
    fn layers_map_to_their_own_vl() {
        // OpenSM's default QoS table: SL i -> VL i, SL15 -> VL7.
        let default = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xE7];
        let mut t = default;
        assert_eq!(map_layers(&mut t, 0, 8), 0);
        assert_eq!(t, default);

        // An admin table with everything on VL0.
        let orig = [0u8; 8];
        let mut t = orig;
        let changed = map_layers(&mut t, 0, 3);
        assert_eq!(changed, 0b110);
        assert_eq!(
            (get_vl(&t, 0), get_vl(&t, 1), get_vl(&t, 2), get_vl(&t, 3)),
            (0, 1, 2, 0)
        );
        assert_eq!(describe(&orig, changed), "SL1->VL0, SL2->VL0");
        // Never beyond the 15 data VLs.
        let mut t = [0u8; 8];
        map_layers(&mut t, 0, 16);
        assert_eq!(get_vl(&t, 15), 0);
    }

    #[test]
    fn a_range_of_layers_keeps_the_admin_entries_outside_it() {
        // Admin: SL i -> VL i for 0..7, SL 8..15 -> VL 7 and SL 9 -> VL 2.
        let mut admin = [0x01, 0x23, 0x45, 0x67, 0x77, 0x77, 0x77, 0x77];
        set_vl(&mut admin, 9, 2);
        let mut t = admin;
        // Layers on SLs 2..=4 (the admin's table agrees there).
        assert_eq!(map_layers(&mut t, 2, 3), 0);
        assert_eq!(t, admin);
        // SL 9 shares layer VL 2; SL 8 (VL 7) does not; SL 2..4 are the layers themselves.
        assert_eq!(sharing_layer_vls(&t, 2, 3), 1 << 9);
        assert_eq!(describe(&t, sharing_layer_vls(&t, 2, 3)), "SL9->VL2");
        // Layers on SLs 4..=7 of an all-VL0 table: only those four change.
        let mut t = [0u8; 8];
        assert_eq!(map_layers(&mut t, 4, 4), 0b1111_0000);
        assert_eq!(
            (get_vl(&t, 3), get_vl(&t, 4), get_vl(&t, 7), get_vl(&t, 8)),
            (0, 4, 7, 0)
        );
        assert_eq!(sharing_layer_vls(&t, 4, 4), 0);
    }
}
