//! Records the git revision of the source tree and the cargo profile in the extension module,
//! so result provenance can name the exact code that produced it even for a non-editable
//! install. `MOBIPATH_GIT_REVISION` in the environment overrides the lookup (for builds from
//! an unpacked source archive); outside a git checkout the revision is "unknown".
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MOBIPATH_GIT_REVISION");
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=MOBIPATH_BUILD_PROFILE={profile}");
    // Set by the build backend (build-backend/mobipath_build.py) when it builds profile-guided:
    // what the profile was trained on; empty otherwise.
    println!("cargo:rerun-if-env-changed=MOBIPATH_BUILD_PGO");
    let pgo = std::env::var("MOBIPATH_BUILD_PGO").unwrap_or_default();
    println!("cargo:rustc-env=MOBIPATH_BUILD_PGO={pgo}");

    if let Ok(rev) = std::env::var("MOBIPATH_GIT_REVISION") {
        println!("cargo:rustc-env=MOBIPATH_GIT_REVISION={rev}");
        return;
    }
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("..").join("..");
    let rev = revision(&root).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MOBIPATH_GIT_REVISION={rev}");
}

/// `HEAD`'s commit, with "-dirty" if tracked files differ from it; `None` unless `root` is the
/// top of a git work tree (so a source archive unpacked inside another repository is not
/// mistaken for ours).
fn revision(root: &Path) -> Option<String> {
    let top = PathBuf::from(git(root, &["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != root.canonicalize().ok()? {
        return None;
    }
    // Rebuild when HEAD moves or the index changes (commits, checkouts, staging).
    if let Some(git_dir) = git(root, &["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        let mut watch = vec![git_dir.join("HEAD"), git_dir.join("index"), git_dir.join("packed-refs")];
        if let Some(head_ref) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
            watch.push(git_dir.join(head_ref));
        }
        for p in watch.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    let rev = git(root, &["rev-parse", "HEAD"])?;
    let dirty = git(root, &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    Some(if dirty { format!("{rev}-dirty") } else { rev })
}
