//! TUN devices created inside named network namespaces.
//!
//! The calling thread enters the namespace (`setns` on `/run/netns/<name>`), opens
//! `/dev/net/tun` and registers the device (`TUNSETIFF`, `IFF_TUN | IFF_NO_PI`: plain IP packets,
//! no virtio-net header, hence no GSO super-packets and no partial checksums), then returns to
//! its own namespace. The file descriptor keeps working from any namespace; the device is not
//! persistent, so it disappears when the emulator exits, however it exits.
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn last_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn open_ro(path: &str) -> io::Result<OwnedFd> {
    let c = CString::new(path).unwrap();
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_err(path));
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Creates TUN device `ifname` inside namespace `netns` and returns its non-blocking fd.
pub fn create_in_netns(netns: &str, ifname: &str) -> io::Result<OwnedFd> {
    let home = open_ro("/proc/thread-self/ns/net")?;
    let target = open_ro(&format!("/run/netns/{netns}"))?;
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(last_err(&format!("setns into /run/netns/{netns}")));
    }
    let made = create(ifname);
    if unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        // Never carry on in the wrong namespace.
        eprintln!(
            "mobipath-emu: cannot return to the original network namespace: {}",
            io::Error::last_os_error()
        );
        std::process::exit(3);
    }
    made
}

/// Creates TUN device `ifname` in the current namespace; the fd is non-blocking.
pub fn create(ifname: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").unwrap();
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_err("/dev/net/tun"));
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        _pad: [0; 22],
    };
    for (d, s) in req.name.iter_mut().zip(ifname.bytes().take(libc::IFNAMSIZ - 1)) {
        *d = s as libc::c_char;
    }
    // TUNSETIFF = _IOW('T', 202, int)
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) } != 0 {
        return Err(last_err(&format!("TUNSETIFF {ifname}")));
    }
    Ok(fd)
}
