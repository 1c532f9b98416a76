//! Opening `execution.input_file` inside SNOWLUMA_MCP_UPLOAD_ROOT without a check/use gap.
//!
//! "Outside the root" is decided lexically first, before the file system is touched: the path
//! must be relative to the root, or absolute and lexically under it, and contain no `..`.
//! Then the file is opened component by component beneath a handle on the root directory,
//! each step with `O_NOFOLLOW` (intermediate steps also `O_DIRECTORY`), so no symlink is ever
//! followed and a directory swapped for a symlink mid-way cannot lead outside the root. This
//! is what Linux's `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` does, written with plain
//! `openat` so it works on every POSIX system. The opened handle's own metadata must say
//! "regular file"; its size then is exactly what is sent.
//!
//! Every refusal has the same text, so the answer cannot tell a missing file from an
//! unreadable one, a directory, a FIFO or a symlink (no existence oracle).
//!
//! Not on POSIX (Windows): automatic upload is refused with a message saying so; send
//! `upload_file_stream` chunk calls yourself there.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// The one refusal message for any input_file that cannot be used.
pub const REFUSAL: &str = "execution.input_file is not a readable regular file inside SNOWLUMA_MCP_UPLOAD_ROOT \
     (paths are relative to it or absolute under it, without `..` or symlinks)";

/// Why an input file cannot be used.
#[derive(Debug)]
pub enum Refusal {
    /// Any reason at all; see [`REFUSAL`].
    NotUsable,
    /// This platform has no safe way to open it (not POSIX).
    #[cfg_attr(unix, allow(dead_code))]
    Unsupported,
}

/// The path's components below the root, decided without touching the file system.
pub fn lexical(root: &Path, input_file: &str) -> Result<Vec<PathBuf>, Refusal> {
    let requested = Path::new(input_file);
    let relative = if requested.is_absolute() {
        requested
            .strip_prefix(root)
            .map_err(|_| Refusal::NotUsable)?
    } else {
        requested
    };
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(PathBuf::from(part)),
            Component::CurDir => {}
            _ => return Err(Refusal::NotUsable),
        }
    }
    if parts.is_empty() {
        return Err(Refusal::NotUsable);
    }
    Ok(parts)
}

/// Opens `input_file` beneath `root` (see the module comment): the open file and its size.
#[cfg(unix)]
pub fn open_beneath(root: &Path, input_file: &str) -> Result<(File, u64), Refusal> {
    use rustix::fs::{FileType, Mode, OFlags, fstat, open, openat};

    let parts = lexical(root, input_file)?;
    let refuse = |_| Refusal::NotUsable;
    let base = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let mut dir = open(
        root,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .map_err(refuse)?;
    let (last, parents) = parts.split_last().ok_or(Refusal::NotUsable)?;
    for part in parents {
        dir = openat(&dir, part, base | OFlags::DIRECTORY, Mode::empty()).map_err(refuse)?;
    }
    // NONBLOCK so opening a FIFO cannot hang; NOCTTY so a terminal is never adopted.
    let fd = openat(
        &dir,
        last,
        base | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(refuse)?;
    let stat = fstat(&fd).map_err(refuse)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Refusal::NotUsable);
    }
    Ok((File::from(fd), stat.st_size as u64))
}

#[cfg(not(unix))]
pub fn open_beneath(root: &Path, input_file: &str) -> Result<(File, u64), Refusal> {
    lexical(root, input_file)?;
    Err(Refusal::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_is_decided_lexically() {
        let root = Path::new("/srv/up");
        assert!(lexical(root, "a/b.txt").is_ok());
        assert!(lexical(root, "/srv/up/a.txt").is_ok());
        assert!(lexical(root, "./a.txt").is_ok());
        for bad in [
            "/srv/upx/a",
            "/etc/passwd",
            "a/../b",
            "..",
            "",
            "/srv/up",
            "/srv/up/../x",
        ] {
            assert!(lexical(root, bad).is_err(), "{bad}");
        }
    }
}
