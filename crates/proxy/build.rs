//! Puts the source's git commit into `mobipath-proxy --version`, so a binary copied onto a router
//! says which source built it. `MOBIPATH_PROXY_COMMIT` (set by scripts/build-router, or by anyone
//! building outside a git checkout) wins; otherwise `git rev-parse` is asked, with `-dirty` when
//! tracked files differ from the commit; without git the version says `unknown`.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=MOBIPATH_PROXY_COMMIT");
    let commit = match std::env::var("MOBIPATH_PROXY_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            // Rebuild when HEAD moves (the file HEAD and the branch it names).
            for p in ["HEAD", "index"] {
                if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                if let Some(path) = git(&["rev-parse", "--git-path", &r]) {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
            match git(&["rev-parse", "--short=12", "HEAD"]) {
                Some(c) => {
                    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                        .map(|s| !s.is_empty())
                        .unwrap_or(false);
                    if dirty {
                        format!("{c}-dirty")
                    } else {
                        c
                    }
                }
                None => "unknown".to_string(),
            }
        }
    };
    println!("cargo:rustc-env=MOBIPATH_PROXY_COMMIT={commit}");
}
