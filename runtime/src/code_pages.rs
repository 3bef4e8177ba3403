//! Giving back the code pages start-up touched (issue 19). Most of an idle operator's RSS is its own binary's
//! code: the kernel maps 64 KiB around every page a process faults in (fault-around), so start-up (argument
//! parsing, CRD set-up, the first list of every watched kind, TLS set-up) leaves nearly the whole 11-12 MB code
//! segment resident, though the idle loop runs a small part of it. Reordering the code did not help
//! (profile-guided layout moved 182 KB; README, "Scale").
//!
//! [`AFTER_START`] after start, and every [`AGAIN_EVERY`] after that, each operator:
//! - asks the kernel to read its binary's read-only mappings back a page at a time (`MADV_RANDOM`: without it,
//!   each page faulted back brings 128 KiB of read-around, which fault-around then maps);
//! - asks it to reclaim their resident pages (`MADV_PAGEOUT`, Linux 5.4+): they are unmapped, and what runs
//!   afterwards faults back only the pages it uses;
//! - a second later, drops the binary's pages that no process maps from the page cache (`POSIX_FADV_DONTNEED`,
//!   [`drop_unmapped_cache`]), so the memory is free, not only unmapped, and fault-around has nothing to map
//!   beside a page faulted back.
//!
//! Costs: code that runs again is read again from the file, a page at a time, after each page-out.
//!
//! Limits, by the kernel's rules: a file's pages are reclaimed only by a process that owns the file or may write
//! it (`can_do_file_pageout`), so the container images give the operator binaries to the image's user and let
//! group 0 write them (`hack/images/mkoci.py --owned`: an arbitrary UID runs with group 0; the root filesystem
//! is mounted read-only, so nothing writes them; docs/pod-security.md); elsewhere the kernel skips those pages. Pages another process maps are left
//! alone. `OLM_RS_CODE_PAGE_OUT_SECS=0` turns it off.

use std::time::Duration;

/// When the code pages are first given back: after start-up's bursts (first lists, CRD set-up, leader election).
pub const AFTER_START: Duration = Duration::from_secs(60);

/// How long after the page-out the unmapped pages are dropped from the page cache ([`drop_unmapped_cache`]).
pub const CACHE_DROP_AFTER: Duration = Duration::from_secs(1);

/// And again every so often: a burst of work (installs, a big catalog) faults most of the code back in, and an
/// operator is idle most of its life. Rare enough that re-reading the code that is in use costs nothing to speak
/// of (a few MB every ten minutes).
pub const AGAIN_EVERY: Duration = Duration::from_secs(600);

/// One mapping of the binary: start address and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub start: usize,
    pub len: usize,
}

/// The read-only mappings of `exe` in a `/proc/<pid>/maps` text (code, read-only data, unwind tables); writable
/// ones (`.data`, relocated data) are left out. Lines that do not parse are skipped.
pub fn read_only_mappings(maps: &str, exe: &str) -> Vec<Mapping> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let perms = fields.next()?;
            // offset, device, inode, then the path (which may not contain spaces for an executable we start).
            let path = fields.nth(3)?;
            if path != exe || !perms.starts_with('r') || perms.as_bytes().get(1) != Some(&b'-') {
                return None;
            }
            let (from, to) = range.split_once('-')?;
            let start = usize::from_str_radix(from, 16).ok()?;
            let end = usize::from_str_radix(to, 16).ok()?;
            (end > start).then_some(Mapping {
                start,
                len: end - start,
            })
        })
        .collect()
}

/// What one page-out did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PagedOut {
    /// Mappings advised.
    pub mappings: usize,
    /// Bytes of those mappings (what was advised, not what the kernel reclaimed).
    pub bytes: usize,
}

/// Advise the kernel to read the pages of this process's own binary one at a time from now on, and to reclaim
/// those resident.
pub fn page_out() -> std::io::Result<PagedOut> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut done = PagedOut::default();
    for m in read_only_mappings(&maps, &exe.to_string_lossy()) {
        advise(m, Advice::Random)?;
        advise(m, Advice::PageOut)?;
        done.mappings += 1;
        done.bytes += m.len;
    }
    Ok(done)
}

/// Drop the binary's pages that no process maps from the page cache (`POSIX_FADV_DONTNEED`). The page-out
/// unmaps this process's pages, but leaves many of them in the page cache (measured with `fincore`: 11 of 15 MB
/// stayed when this ran right after it, in the same process; a second later, nothing but the pages mapped
/// again), and the pages read ahead at exec and never run stay too. Fault-around would map them again beside
/// every page faulted back. Pages any process maps are kept.
pub fn drop_unmapped_cache() -> std::io::Result<()> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    fadvise_dontneed(&std::fs::File::open(exe)?)
}

#[cfg(target_os = "linux")]
fn fadvise_dontneed(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    #[expect(
        unsafe_code,
        reason = "posix_fadvise is FFI (Cargo.toml [workspace.lints]); this module's second call"
    )]
    // SAFETY: the descriptor is open for the whole call (borrowed from `file`); the advice changes no file data.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

#[cfg(not(target_os = "linux"))]
fn fadvise_dontneed(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

/// The two pieces of advice given.
#[derive(Debug, Clone, Copy)]
enum Advice {
    /// `MADV_RANDOM`: a page faulted back in is read alone, without the 128 KiB read-around that would bring
    /// back (and fault-around then map) its neighbours.
    Random,
    /// `MADV_PAGEOUT`: reclaim the range's pages now.
    PageOut,
}

#[cfg(target_os = "linux")]
fn advise(m: Mapping, advice: Advice) -> std::io::Result<()> {
    let advice = match advice {
        Advice::Random => libc::MADV_RANDOM,
        Advice::PageOut => libc::MADV_PAGEOUT,
    };
    #[expect(
        unsafe_code,
        reason = "madvise is FFI (Cargo.toml [workspace.lints]: the second and last unsafe call, beside malloc_trim)"
    )]
    // SAFETY: MADV_RANDOM and MADV_PAGEOUT change no memory contents: they steer read-ahead and let the kernel
    // reclaim clean pages of a range this process maps (read from /proc/self/maps); a later access faults them
    // back in from the file.
    let rc = unsafe { libc::madvise(m.start as *mut libc::c_void, m.len, advice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_m: Mapping, _advice: Advice) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// The delay `OLM_RS_CODE_PAGE_OUT_SECS` asks for (`0`: never), else [`AFTER_START`].
pub fn delay_from(value: Option<&str>) -> Option<Duration> {
    match value.map(str::trim) {
        None | Some("") => Some(AFTER_START),
        Some(v) => match v.parse::<u64>() {
            Ok(0) => None,
            Ok(secs) => Some(Duration::from_secs(secs)),
            Err(_) => Some(AFTER_START),
        },
    }
}

/// Page the binary's code out after the delay `OLM_RS_CODE_PAGE_OUT_SECS` gives, then every [`AGAIN_EVERY`]
/// (spawned on the current tokio runtime). A failure (an old kernel, say) ends it: it would fail the same way
/// again.
pub fn spawn() {
    let Some(delay) = delay_from(std::env::var("OLM_RS_CODE_PAGE_OUT_SECS").ok().as_deref()) else {
        return;
    };
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        loop {
            let paged_out = async {
                let done = tokio::task::spawn_blocking(page_out).await??;
                tokio::time::sleep(CACHE_DROP_AFTER).await;
                tokio::task::spawn_blocking(drop_unmapped_cache).await??;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(done)
            };
            match paged_out.await {
                Ok(done) => tracing::debug!(
                    mappings = done.mappings,
                    bytes = done.bytes,
                    "code pages given back"
                ),
                Err(error) => {
                    tracing::debug!(%error, "code pages not given back");
                    return;
                }
            }
            tokio::time::sleep(AGAIN_EVERY).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MAPS: &str = "\
55d0c0000000-55d0c0200000 r--p 00000000 fd:01 123 /usr/local/bin/olm-operator
55d0c0200000-55d0c0e00000 r-xp 00200000 fd:01 123 /usr/local/bin/olm-operator
55d0c0e00000-55d0c1000000 r--p 00e00000 fd:01 123 /usr/local/bin/olm-operator
55d0c1000000-55d0c1010000 rw-p 01000000 fd:01 123 /usr/local/bin/olm-operator
55d0c2000000-55d0c2100000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000200000 r-xp 00000000 fd:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000300000-7f0000301000 r-xp 00000000 fd:01 88 /usr/local/bin/olm-operator-old (deleted)
garbage line
zz-yy r-xp 00000000 fd:01 123 /usr/local/bin/olm-operator
";

    #[test]
    fn only_the_binarys_read_only_mappings_are_taken() {
        assert_eq!(
            read_only_mappings(MAPS, "/usr/local/bin/olm-operator"),
            vec![
                Mapping {
                    start: 0x55d0c0000000,
                    len: 0x200000
                },
                Mapping {
                    start: 0x55d0c0200000,
                    len: 0xc00000
                },
                Mapping {
                    start: 0x55d0c0e00000,
                    len: 0x200000
                },
            ]
        );
    }

    #[test]
    fn another_path_takes_nothing() {
        assert!(read_only_mappings(MAPS, "/usr/local/bin/catalog-operator").is_empty());
    }

    #[rstest]
    #[case::unset(None, Some(AFTER_START))]
    #[case::empty(Some(""), Some(AFTER_START))]
    #[case::zero_turns_it_off(Some("0"), None)]
    #[case::seconds(Some("5"), Some(Duration::from_secs(5)))]
    #[case::not_a_number_keeps_the_default(Some("soon"), Some(AFTER_START))]
    fn the_delay_comes_from_the_environment(
        #[case] value: Option<&str>,
        #[case] want: Option<Duration>,
    ) {
        assert_eq!(delay_from(value), want);
    }
}
