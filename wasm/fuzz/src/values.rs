//! Arguments for exported functions: the values where bugs live (zero,
//! one, minus one, the extremes, addresses at the edge of linear memory,
//! NaN, infinities, negative zero) mixed with random ones.

use dispatch::Value;
use wasm_runtime::module::WasmType;

use crate::rng::Rng;

/// Addresses near the end of a memory of `memory_bytes` bytes and near
/// the 4 GiB wrap, where bounds checks are decided.
fn edge_address(rng: &mut Rng, memory_bytes: u64) -> u64 {
    let near = [memory_bytes, 0x1_0000_0000, 0x1_0000, 0x8000_0000][rng.below(4)];
    near.wrapping_sub(rng.below(17) as u64)
}

fn integer_bits(rng: &mut Rng, memory_bytes: u64, wide: bool) -> u64 {
    let max = if wide {
        i64::MAX as u64
    } else {
        i32::MAX as u64
    };
    let min = if wide {
        i64::MIN as u64
    } else {
        i32::MIN as i64 as u64
    };
    match rng.below(10) {
        0 => 0,
        1 => 1,
        2 => u64::MAX, // -1
        3 => min,
        4 => max,
        5 => rng.below(256) as u64,
        6 | 7 => edge_address(rng, memory_bytes),
        _ => rng.next_u64(),
    }
}

/// A value of type `ty` for a call; `None` for types no call can pass
/// (references), which the caller then skips.
pub fn argument(rng: &mut Rng, ty: WasmType, memory_bytes: u64) -> Option<Value> {
    Some(match ty {
        WasmType::I32 => Value::I32(integer_bits(rng, memory_bytes, false) as i32),
        WasmType::I64 => Value::I64(integer_bits(rng, memory_bytes, true) as i64),
        WasmType::F32 => Value::F32(match rng.below(10) {
            0 => 0.0,
            1 => -0.0,
            2 => f32::NAN,
            3 => f32::INFINITY,
            4 => f32::NEG_INFINITY,
            5 => f32::MIN_POSITIVE,
            6 => 2_147_483_648.0,
            7 => -1.5,
            _ => f32::from_bits(rng.next_u64() as u32),
        }),
        WasmType::F64 => Value::F64(match rng.below(10) {
            0 => 0.0,
            1 => -0.0,
            2 => f64::NAN,
            3 => f64::INFINITY,
            4 => f64::NEG_INFINITY,
            5 => f64::MIN_POSITIVE,
            6 => 9_223_372_036_854_775_808.0,
            7 => -1.5,
            _ => f64::from_bits(rng.next_u64()),
        }),
        WasmType::Other => return None,
    })
}

/// Arguments for a function taking `params`, or `None` if one of them is a
/// type no call can pass.
pub fn arguments(
    rng: &mut Rng,
    params: &[WasmType],
    memory_bytes: u64,
) -> Option<alloc::vec::Vec<Value>> {
    params
        .iter()
        .map(|&ty| argument(rng, ty, memory_bytes))
        .collect()
}
