//! The generators proper. Each takes a params struct, validates it and returns a [`Fabric`](crate::fabric::Fabric).

use super::{param_err, Net, TopoError};

/// Refuse fabrics whose node count cannot fit the LID space long before allocating them.
const MAX_NODES: u64 = u16::MAX as u64;

fn checked_product(
    generator: &'static str,
    xs: impl IntoIterator<Item = u64>,
) -> Result<u64, TopoError> {
    let mut p = 1u64;
    for x in xs {
        p = p
            .checked_mul(x)
            .filter(|&p| p <= MAX_NODES)
            .ok_or_else(|| param_err(generator, format!("more than {MAX_NODES} nodes")))?;
    }
    Ok(p)
}

/// Adds `c` single-port CAs to switch `sw` on its ports `1..=c`, named `H-<running index>`.
fn attach_cas(net: &mut Net, sw: u32, c: u32, ca_count: &mut u32) -> Result<(), TopoError> {
    for p in 1..=c {
        let ca = net.ca(1, format!("H-{}", *ca_count))?;
        *ca_count += 1;
        net.link(ca, 1, sw, p)?;
    }
    Ok(())
}

mod direct;
mod random;
mod trees;

pub use direct::*;
pub use random::*;
pub use trees::*;
