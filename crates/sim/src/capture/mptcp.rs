//! MPTCP options on the wire (RFC 8684, MPTCP v1) and the connection's cryptographic material.
//!
//! - Keys, tokens, IDSNs (§3.1, §3.2): the token is the most significant 32 bits of SHA-256 of
//!   the 64-bit key (network order), the initial data sequence number (IDSN) its least
//!   significant 64 bits; `H` = HMAC-SHA256 is the only algorithm flag set (no checksums: `A` = 0,
//!   as Linux by default).
//! - MP_CAPABLE (§3.1, Figure 4): v1 puts no key on the SYN (length 4), the listener's key on the
//!   SYN/ACK (12), both keys on the third ACK (20).
//! - MP_JOIN (§3.2, Figures 5–7): SYN (12: B flag, address ID, the listener's token, the
//!   initiator's nonce R-A), SYN/ACK (16: B flag, address ID, HMAC-B truncated to its leftmost
//!   64 bits, nonce R-B) with HMAC-B = HMAC-SHA256(Key = Key-B ‖ Key-A, Msg = R-B ‖ R-A).
//! - DSS (§3.3, Figure 9): flags `A` (DATA_ACK present), `a` (8-octet DATA_ACK), `M` (mapping
//!   present), `m` (8-octet DSN), `F` (DATA_FIN); the mapping's subflow sequence number is
//!   relative to the subflow's initial sequence number (1 = the first data byte).
//! - MP_PRIO (§3.3.8, Figure 11): length 3, the B flag.
//!
//! Both the DATA_ACK and the DSN are written as 8 octets, as Linux does once the peer uses 64-bit
//! DSNs; Wireshark 4.0 also decides a mapping's DSN width from the `a` flag, so mixing widths
//! would misdecode there.
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// TCP option kind of every MPTCP option.
pub const KIND: u8 = 30;
const MP_CAPABLE: u8 = 0x0;
const MP_JOIN: u8 = 0x1;
const DSS: u8 = 0x2;
const MP_PRIO: u8 = 0x5;
const VERSION: u8 = 1;
/// MP_CAPABLE flags: only `H` (HMAC-SHA256).
const FLAG_H: u8 = 0x01;

/// (token, IDSN) of a key (§3.1).
pub fn token_and_idsn(key: u64) -> (u32, u64) {
    let d = Sha256::digest(key.to_be_bytes());
    let token = u32::from_be_bytes(d[0..4].try_into().expect("4 bytes"));
    let idsn = u64::from_be_bytes(d[24..32].try_into().expect("8 bytes"));
    (token, idsn)
}

/// HMAC-SHA256 over `msg_first ‖ msg_second` keyed with `key_first ‖ key_second`, truncated to
/// its leftmost 64 bits (the MP_JOIN SYN/ACK's HMAC, §3.2).
pub fn join_hmac64(key_first: u64, key_second: u64, msg_first: u32, msg_second: u32) -> u64 {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&key_first.to_be_bytes());
    key[8..].copy_from_slice(&key_second.to_be_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(&msg_first.to_be_bytes());
    mac.update(&msg_second.to_be_bytes());
    let out = mac.finalize().into_bytes();
    u64::from_be_bytes(out[..8].try_into().expect("8 bytes"))
}

fn subtype(s: u8, low: u8) -> u8 {
    (s << 4) | (low & 0x0f)
}

/// MP_CAPABLE on a SYN (no key in v1).
pub fn capable_syn(out: &mut Vec<u8>) {
    out.extend_from_slice(&[KIND, 4, subtype(MP_CAPABLE, VERSION), FLAG_H]);
}

/// MP_CAPABLE on the SYN/ACK: the listener's key.
pub fn capable_synack(out: &mut Vec<u8>, listener_key: u64) {
    out.extend_from_slice(&[KIND, 12, subtype(MP_CAPABLE, VERSION), FLAG_H]);
    out.extend_from_slice(&listener_key.to_be_bytes());
}

/// MP_CAPABLE on the third ACK: the initiator's key, then the listener's.
pub fn capable_ack(out: &mut Vec<u8>, initiator_key: u64, listener_key: u64) {
    out.extend_from_slice(&[KIND, 20, subtype(MP_CAPABLE, VERSION), FLAG_H]);
    out.extend_from_slice(&initiator_key.to_be_bytes());
    out.extend_from_slice(&listener_key.to_be_bytes());
}

/// MP_JOIN on a SYN.
pub fn join_syn(out: &mut Vec<u8>, backup: bool, address_id: u8, listener_token: u32, nonce: u32) {
    out.extend_from_slice(&[KIND, 12, subtype(MP_JOIN, backup as u8), address_id]);
    out.extend_from_slice(&listener_token.to_be_bytes());
    out.extend_from_slice(&nonce.to_be_bytes());
}

/// MP_JOIN on a SYN/ACK.
pub fn join_synack(out: &mut Vec<u8>, backup: bool, address_id: u8, truncated_hmac: u64, nonce: u32) {
    out.extend_from_slice(&[KIND, 16, subtype(MP_JOIN, backup as u8), address_id]);
    out.extend_from_slice(&truncated_hmac.to_be_bytes());
    out.extend_from_slice(&nonce.to_be_bytes());
}

/// A DSS mapping: the data-level sequence number of the payload's first byte, the subflow
/// sequence number relative to the subflow's ISN, and the data-level length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub dsn: u64,
    pub ssn: u32,
    pub len: u16,
}

/// Bytes [`dss`] writes.
pub fn dss_len(data_ack: Option<u64>, mapping: Option<Mapping>) -> usize {
    4 + if data_ack.is_some() { 8 } else { 0 } + if mapping.is_some() { 14 } else { 0 }
}

/// DSS with an optional 8-octet DATA_ACK and an optional mapping (8-octet DSN, no checksum).
pub fn dss(out: &mut Vec<u8>, data_ack: Option<u64>, mapping: Option<Mapping>, data_fin: bool) {
    let len = dss_len(data_ack, mapping) as u8;
    let mut flags = 0u8;
    if data_fin {
        flags |= 0x10;
    }
    if mapping.is_some() {
        flags |= 0x04 | 0x08; // M, m
    }
    if data_ack.is_some() {
        flags |= 0x01 | 0x02; // A, a
    }
    out.extend_from_slice(&[KIND, len, subtype(DSS, 0), flags]);
    if let Some(a) = data_ack {
        out.extend_from_slice(&a.to_be_bytes());
    }
    if let Some(m) = mapping {
        out.extend_from_slice(&m.dsn.to_be_bytes());
        out.extend_from_slice(&m.ssn.to_be_bytes());
        out.extend_from_slice(&m.len.to_be_bytes());
    }
}

/// MP_PRIO: the sender of this option asks its peer to treat the subflow as backup (B = 1) or
/// regular (B = 0).
pub fn prio(out: &mut Vec<u8>, backup: bool) {
    out.extend_from_slice(&[KIND, 3, subtype(MP_PRIO, backup as u8)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_and_idsn_are_the_ends_of_the_sha256_of_the_key() {
        // SHA-256 of eight zero bytes: af5570f5a1810b7a f78caf4bc70a660f 0df51e42baf91d4d e5b2328de0e83dfc.
        let (token, idsn) = token_and_idsn(0);
        assert_eq!(token, 0xaf55_70f5);
        assert_eq!(idsn, 0xe5b2_328d_e0e8_3dfc);
    }

    #[test]
    fn join_hmac_is_keyed_by_both_keys_in_order() {
        let a = join_hmac64(1, 2, 3, 4);
        assert_ne!(a, join_hmac64(2, 1, 3, 4), "Key-B ‖ Key-A differs from Key-A ‖ Key-B");
        assert_ne!(a, join_hmac64(1, 2, 4, 3));
        assert_eq!(a, join_hmac64(1, 2, 3, 4));
    }

    #[test]
    fn option_lengths_match_the_rfc_figures() {
        let mut b = Vec::new();
        capable_syn(&mut b);
        assert_eq!(b, [30, 4, 0x01, 0x01]);
        b.clear();
        capable_synack(&mut b, 7);
        assert_eq!(b.len(), 12);
        b.clear();
        capable_ack(&mut b, 7, 8);
        assert_eq!(b.len(), 20);
        assert_eq!(b[1], 20);
        b.clear();
        join_syn(&mut b, true, 2, 0xdead_beef, 9);
        assert_eq!(b[..4], [30, 12, 0x11, 2]);
        b.clear();
        join_synack(&mut b, false, 2, 5, 9);
        assert_eq!(b.len(), 16);
        b.clear();
        let m = Mapping {
            dsn: 1 << 40,
            ssn: 1,
            len: 1448,
        };
        dss(&mut b, Some(3), Some(m), false);
        assert_eq!(b.len(), 26);
        assert_eq!(b[..4], [30, 26, 0x20, 0x0f]);
        assert_eq!(u64::from_be_bytes(b[12..20].try_into().unwrap()), 1 << 40);
        assert_eq!(u16::from_be_bytes(b[24..26].try_into().unwrap()), 1448);
        b.clear();
        dss(&mut b, Some(3), None, false);
        assert_eq!(b.len(), 12);
        assert_eq!(b[3], 0x03);
        b.clear();
        prio(&mut b, true);
        assert_eq!(b, [30, 3, 0x51]);
    }
}
