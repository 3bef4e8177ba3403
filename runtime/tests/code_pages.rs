//! `code_pages::page_out` gives back the resident pages of this process's own binary: the RSS of the binary's
//! mappings falls, and the test keeps running from the pages it faults back in. Its own test binary, run by one
//! process (pages another process maps are left alone by the kernel), and by the file's owner (as the kernel
//! requires for file pages: the build made it).

#![cfg(target_os = "linux")]

use olm_runtime::code_pages;

/// KiB resident in the mappings of this binary, from /proc/self/smaps.
fn binary_resident_kib() -> u64 {
    let exe = std::fs::read_link("/proc/self/exe").expect("/proc/self/exe");
    let exe = exe.to_string_lossy().into_owned();
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let mut ours = false;
    let mut total = 0;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first.contains('-') && !first.ends_with(':') {
            ours = fields.nth(4) == Some(exe.as_str());
        } else if ours && first == "Rss:" {
            total += fields
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

fn touch_read_only_mappings(exe: &str) {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let mut mem = std::fs::File::open("/proc/self/mem").expect("/proc/self/mem");
    let mut page = vec![0u8; 4096];
    for m in code_pages::read_only_mappings(&maps, exe) {
        for at in (m.start..m.start + m.len).step_by(4096) {
            mem.seek(SeekFrom::Start(at as u64)).expect("seek");
            mem.read_exact(&mut page)
                .expect("read a page of our own mapping");
        }
    }
}

#[test]
fn the_binarys_pages_are_given_back() {
    // The build has just written this binary: its pages may still be dirty in the page cache, and the kernel
    // reclaims only clean ones (a deployed binary's pages are clean). Write them back first.
    let exe = std::fs::read_link("/proc/self/exe").expect("/proc/self/exe");
    std::fs::File::open(&exe)
        .and_then(|f| f.sync_all())
        .expect("fsync of the test binary");
    // Make every page of the binary's read-only mappings resident (reading /proc/self/mem faults them in), so
    // "before" is the whole of them, not whatever the test harness happened to run.
    touch_read_only_mappings(&exe.to_string_lossy());
    let before = binary_resident_kib();
    let done = code_pages::page_out().expect("madvise(MADV_PAGEOUT) on our own mappings");
    let after = binary_resident_kib();
    println!("code_pages: the binary's resident pages {before} KiB -> {after} KiB ({done:?})");
    assert!(
        done.mappings >= 2,
        "code and read-only data at least: {done:?}"
    );
    assert!(
        before >= 256,
        "the binary should have resident pages before: {before} KiB"
    );
    assert!(
        after * 2 < before,
        "fewer than half of {before} KiB given back (now {after} KiB)"
    );
}
