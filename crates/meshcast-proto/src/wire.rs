//! The versioned binary wire format (docs/wire-format.md describes every
//! field).
//!
//! Every meshcast datagram starts with a 4-byte common header:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | version, currently [`VERSION`] |
//! | 1 | 1 | packet type ([`PacketType`]) |
//! | 2 | 2 | flags, big-endian; none defined yet, must be zero |
//!
//! followed by the type's body. All integers are big-endian. Parsing checks
//! every length and returns a typed [`WireError`]; it never panics.

use thiserror::Error;

/// The wire format version this build speaks.
pub const VERSION: u8 = 1;

/// Size of the common header.
pub const COMMON_HEADER_LEN: usize = 4;

/// The packet types of wire version 1.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum PacketType {
    /// Measurement traffic from [`crate::traffic`] generators.
    Traffic = 1,
    /// A Celerity data packet (`celerity::wire`).
    CelerityData = 2,
    /// A Celerity control packet (`celerity::wire`).
    CelerityControl = 3,
    /// A TCP-model data segment (`transport::wire`).
    TcpSegment = 4,
    /// A TCP-model acknowledgement (`transport::wire`).
    TcpAck = 5,
    /// A TFRC data packet (`transport::wire`).
    TfrcData = 6,
    /// A TFRC feedback packet (`transport::wire`).
    TfrcFeedback = 7,
    /// An MSB control packet: NACK or ACK (`msb::wire`).
    MsbControl = 8,
    /// A Celerity coded repair packet (`celerity::wire`, §5.4).
    CelerityRepair = 9,
}

impl PacketType {
    fn from_u8(v: u8) -> Option<PacketType> {
        match v {
            1 => Some(PacketType::Traffic),
            2 => Some(PacketType::CelerityData),
            3 => Some(PacketType::CelerityControl),
            4 => Some(PacketType::TcpSegment),
            5 => Some(PacketType::TcpAck),
            6 => Some(PacketType::TfrcData),
            7 => Some(PacketType::TfrcFeedback),
            8 => Some(PacketType::MsbControl),
            9 => Some(PacketType::CelerityRepair),
            _ => None,
        }
    }
}

/// Why a datagram could not be parsed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Error)]
pub enum WireError {
    /// Fewer bytes than the header or body needs.
    #[error("truncated: {needed} bytes needed, {got} present")]
    Truncated {
        /// Bytes the header or body needs.
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// A version this build does not speak.
    #[error("unsupported wire version {0}")]
    Version(u8),
    /// An unknown packet type.
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// Flags set that this version does not define.
    #[error("undefined flags {0:#06x}")]
    Flags(u16),
    /// A body whose fields are inconsistent (the text says which).
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    /// A packet of another type than the parser expected.
    #[error("expected a {expected:?} packet, got {got:?}")]
    WrongType {
        /// The type the parser handles.
        expected: PacketType,
        /// The type the packet carries.
        got: PacketType,
    },
}

/// The common header of every datagram.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CommonHeader {
    /// The packet type.
    pub packet_type: PacketType,
}

impl CommonHeader {
    /// Parse the common header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<CommonHeader, WireError> {
        let h: &[u8; COMMON_HEADER_LEN] = buf.first_chunk().ok_or(WireError::Truncated {
            needed: COMMON_HEADER_LEN,
            got: buf.len(),
        })?;
        if h[0] != VERSION {
            return Err(WireError::Version(h[0]));
        }
        let packet_type = PacketType::from_u8(h[1]).ok_or(WireError::UnknownType(h[1]))?;
        let flags = u16::from_be_bytes([h[2], h[3]]);
        if flags != 0 {
            return Err(WireError::Flags(flags));
        }
        Ok(CommonHeader { packet_type })
    }

    /// Write the common header into the first [`COMMON_HEADER_LEN`] bytes
    /// of `out`, which must be at least that long.
    pub fn emit(&self, out: &mut [u8; COMMON_HEADER_LEN]) {
        *out = [VERSION, self.packet_type as u8, 0, 0];
    }
}

/// Read a big-endian `u32` at `off`; the caller has checked the length.
pub(crate) fn be_u16(buf: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([buf[off], buf[off + 1]])
}

pub(crate) fn be_u32(buf: &[u8], off: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[off..off + 4]);
    u32::from_be_bytes(b)
}

/// Read a big-endian `u64` at `off`; the caller has checked the length.
pub(crate) fn be_u64(buf: &[u8], off: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[off..off + 8]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_header_errors() {
        assert_eq!(
            CommonHeader::parse(&[1, 1]),
            Err(WireError::Truncated { needed: 4, got: 2 })
        );
        assert_eq!(
            CommonHeader::parse(&[2, 1, 0, 0]),
            Err(WireError::Version(2))
        );
        assert_eq!(
            CommonHeader::parse(&[1, 99, 0, 0]),
            Err(WireError::UnknownType(99))
        );
        assert_eq!(CommonHeader::parse(&[1, 1, 0, 1]), Err(WireError::Flags(1)));
        let mut out = [0u8; 4];
        CommonHeader {
            packet_type: PacketType::Traffic,
        }
        .emit(&mut out);
        assert_eq!(
            CommonHeader::parse(&out),
            Ok(CommonHeader {
                packet_type: PacketType::Traffic
            })
        );
    }
}
