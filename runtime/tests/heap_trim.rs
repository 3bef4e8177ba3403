//! `heap_trim::trim` hands memory freed inside a thread's malloc arena back to the kernel (glibc), where `free`
//! alone does not: the freed blocks lie below a block still in use, so the arena's top cannot shrink.
//! Its own test binary, so no other test allocates meanwhile.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use olm_runtime::heap_trim;

const BLOCKS: usize = 4096;
const BLOCK: usize = 16 * 1024; // under glibc's mmap threshold (128 KiB): from the arena, not mmap

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

#[test]
fn memory_freed_below_a_live_block_is_released_by_a_trim() {
    // 64 MiB in 16 KiB blocks on a thread of its own (so in an arena of its own), every page touched; all but
    // the last block freed, and the last one kept alive: it pins the arena's top.
    let pinned = std::thread::spawn(|| {
        let mut blocks: Vec<Vec<u8>> = (0..BLOCKS)
            .map(|i| vec![(i % 251) as u8 + 1; BLOCK])
            .collect();
        let last = blocks.pop();
        drop(blocks);
        last
    })
    .join()
    .expect("allocating thread");
    let before = resident_kib();
    let released = heap_trim::trim();
    let after = resident_kib();
    assert!(released, "malloc_trim released nothing (RSS {before} KiB)");
    let freed_kib = before.saturating_sub(after);
    assert!(
        freed_kib >= 32 * 1024,
        "expected most of the 64 MiB freed below the pinned block back, RSS went {before} -> {after} KiB"
    );
    assert_eq!(
        pinned.map(|b| b.len()),
        Some(BLOCK),
        "the live block is untouched"
    );
}
