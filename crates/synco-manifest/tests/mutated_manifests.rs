//! A damaged manifest is refused with an error, never a panic, and never
//! loaded with a copy outside its buffers. `data/gemm-ar-gather.json` is
//! what `synco compile` wrote for the gathered all-reduce of `tools/dev
//! example` (`build/example/fused-ar-gather/`): copies, 2D reduction copies
//! and completion waits. Every integer in it is replaced in turn by values a
//! damaged file could hold; each result must load or fail cleanly, and any
//! that loads must keep every copy inside its buffers.
//! (After a manifest format change, regenerate the file with
//! `tools/dev example`.)

use serde_json::Value;
use synco_manifest::LaunchManifest;

const MANIFEST: &str = include_str!("data/gemm-ar-gather.json");

/// Paths to every integer leaf of `value` (as JSON pointers).
fn integer_leaves(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                integer_leaves(v, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                integer_leaves(v, format!("{at}/{i}"), out);
            }
        }
        Value::Number(n) if n.is_i64() || n.is_u64() => out.push(at),
        _ => {}
    }
}

/// Every byte a loaded manifest's copies touch lies in their buffers.
fn copies_inside(m: &LaunchManifest) -> bool {
    let Some(fused) = &m.fused else {
        return true;
    };
    let size = |name: &str| {
        fused
            .buffers
            .iter()
            .find(|b| b.name == name)
            .map(|b| (b.bytes() as i128, b.element_bytes.unwrap_or(0) as i128))
    };
    let fits = |name: &str, start: i128, rows: i128, pitch: i128, width: i128| {
        size(name).is_some_and(|(bytes, _)| {
            start >= 0 && rows >= 1 && width >= 1 && start + (rows - 1) * pitch + width <= bytes
        })
    };
    let copies_fit = fused.copies.iter().flatten().all(|c| {
        let e = |name: &str| size(name).map_or(0, |(_, e)| e);
        fits(
            &c.src_buffer,
            c.src_offset as i128 * e(&c.src_buffer),
            c.rows as i128,
            c.src_pitch as i128 * e(&c.src_buffer),
            c.row_elems as i128 * e(&c.src_buffer),
        ) && fits(
            &c.dst_buffer,
            c.dst_offset as i128 * e(&c.dst_buffer),
            c.rows as i128,
            c.dst_pitch as i128 * e(&c.dst_buffer),
            c.row_elems as i128 * e(&c.dst_buffer),
        )
    });
    let reductions_fit = fused.reduction_copies.iter().flatten().all(|c| {
        let (rows, src_pitch, dst_pitch) = c.rows.map_or((1, c.bytes, c.bytes), |r| {
            (r.count, r.src_pitch, r.dst_pitch)
        });
        fits(
            &c.src_buffer,
            c.src_offset as i128,
            rows as i128,
            src_pitch as i128,
            c.bytes as i128,
        ) && fits(
            &c.dst_buffer,
            c.dst_offset as i128,
            rows as i128,
            dst_pitch as i128,
            c.bytes as i128,
        )
    });
    copies_fit && reductions_fit
}

#[test]
fn damaged_manifests_are_refused_or_keep_their_copies_inside_their_buffers() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join("k.json");
    std::fs::write(&path, MANIFEST).expect("writable scratch");
    let loaded = LaunchManifest::load(&path).expect("the recorded manifest loads");
    assert!(copies_inside(&loaded));
    let fused = loaded.fused.as_ref().expect("a fused manifest");
    assert!(
        fused.copies.iter().flatten().count() > 0,
        "no copies to damage"
    );
    assert!(
        fused.reduction_copies.iter().flatten().count() > 0,
        "no reduction copies to damage"
    );

    let original: Value = serde_json::from_str(MANIFEST).expect("JSON");
    let mut leaves = Vec::new();
    integer_leaves(&original, String::new(), &mut leaves);
    assert!(leaves.len() > 100, "only {} integers", leaves.len());
    let (mut refused, mut loaded_count) = (0, 0);
    for leaf in &leaves {
        for value in [-1i64, 0, 3, 1 << 40, i64::MAX] {
            let mut damaged = original.clone();
            *damaged.pointer_mut(leaf).expect("the leaf") = Value::from(value);
            std::fs::write(&path, damaged.to_string()).expect("writable scratch");
            let result = std::panic::catch_unwind(|| LaunchManifest::load(&path));
            match result {
                Err(_) => panic!("loading with {leaf} = {value} panicked"),
                Ok(Err(_)) => refused += 1,
                Ok(Ok(m)) => {
                    loaded_count += 1;
                    assert!(
                        copies_inside(&m),
                        "{leaf} = {value} loaded with a copy outside its buffers"
                    );
                }
            }
        }
    }
    // Both outcomes occur (e.g. an order or a pid count changes nothing
    // the loader checks; a rank, flag, offset or size out of range does).
    assert!(
        refused > 100 && loaded_count > 100,
        "{refused} refused, {loaded_count} loaded"
    );
}
