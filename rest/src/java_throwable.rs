//! A failure as Flink's client reads it: a Java-serialised
//! `org.apache.flink.util.SerializedThrowable` (the `serialized-throwable` of an execution
//! result's `failure-cause`), written by hand because no Rust crate writes Java's serialisation
//! stream. The object carries the message and the "stack trace" text, no cause, no stack
//! frames and no serialised original exception (Flink's `deserializeError` then answers the
//! `SerializedThrowable` itself).
//!
//! The stream (Java Object Serialization Specification, chapter 6): the magic and version, a
//! new object whose class descriptors are `SerializedThrowable` (3 fields), `Exception` (none)
//! and `Throwable` (4 fields, written with its `writeObject`), then the field values from the
//! top superclass down: `Throwable`'s (`cause`, `detailMessage`, `stackTrace`,
//! `suppressedExceptions`, then the end of its block data) and `SerializedThrowable`'s
//! (`fullStringifiedStackTrace`, `originalErrorClassName`, `serializedException`).

use base64::Engine as _;

const STREAM_MAGIC: [u8; 2] = [0xac, 0xed];
const STREAM_VERSION: [u8; 2] = [0x00, 0x05];
const TC_NULL: u8 = 0x70;
const TC_CLASSDESC: u8 = 0x72;
const TC_OBJECT: u8 = 0x73;
const TC_STRING: u8 = 0x74;
const TC_ENDBLOCKDATA: u8 = 0x78;
const TC_LONGSTRING: u8 = 0x7c;
const SC_WRITE_METHOD: u8 = 0x01;
const SC_SERIALIZABLE: u8 = 0x02;

/// A class descriptor: name, serialVersionUID, flags, and fields as (type code, name, class
/// signature for object fields).
struct ClassDesc {
    name: &'static str,
    serial_version_uid: u64,
    flags: u8,
    fields: &'static [(u8, &'static str, &'static str)],
}

/// Flink 1.20's `SerializedThrowable` and its superclasses, with the serialVersionUIDs their
/// streams carry.
const CLASSES: [ClassDesc; 3] = [
    ClassDesc {
        name: "org.apache.flink.util.SerializedThrowable",
        serial_version_uid: 0x6516_9df5_1fa7_13f3,
        flags: SC_SERIALIZABLE,
        fields: &[
            (b'L', "fullStringifiedStackTrace", "Ljava/lang/String;"),
            (b'L', "originalErrorClassName", "Ljava/lang/String;"),
            (b'[', "serializedException", "[B"),
        ],
    },
    ClassDesc {
        name: "java.lang.Exception",
        serial_version_uid: 0xd0fd_1f3e_1a3b_1cc4,
        flags: SC_SERIALIZABLE,
        fields: &[],
    },
    ClassDesc {
        name: "java.lang.Throwable",
        serial_version_uid: 0xd5c6_3527_3977_b8cb,
        flags: SC_WRITE_METHOD | SC_SERIALIZABLE,
        fields: &[
            (b'L', "cause", "Ljava/lang/Throwable;"),
            (b'L', "detailMessage", "Ljava/lang/String;"),
            (b'[', "stackTrace", "[Ljava/lang/StackTraceElement;"),
            (b'L', "suppressedExceptions", "Ljava/util/List;"),
        ],
    },
];

/// Java's "modified UTF-8": NUL as two bytes, characters beyond the BMP as two 3-byte
/// surrogates.
fn modified_utf8(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x0001..=0x007f => out.push(u8::try_from(unit).unwrap_or(b'?')),
            0x0000 | 0x0080..=0x07ff => {
                out.push(0xc0 | u8::try_from(unit >> 6).unwrap_or(0));
                out.push(0x80 | u8::try_from(unit & 0x3f).unwrap_or(0));
            }
            _ => {
                out.push(0xe0 | u8::try_from(unit >> 12).unwrap_or(0));
                out.push(0x80 | u8::try_from((unit >> 6) & 0x3f).unwrap_or(0));
                out.push(0x80 | u8::try_from(unit & 0x3f).unwrap_or(0));
            }
        }
    }
    out
}

/// A short UTF string (class and field names: always below 64 KiB).
fn put_utf(out: &mut Vec<u8>, text: &str) {
    let bytes = modified_utf8(text);
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&bytes[..usize::from(len)]);
}

/// A new string object: `TC_STRING`, or `TC_LONGSTRING` from 64 KiB of modified UTF-8 on.
fn put_string(out: &mut Vec<u8>, text: &str) {
    let bytes = modified_utf8(text);
    match u16::try_from(bytes.len()) {
        Ok(len) => {
            out.push(TC_STRING);
            out.extend_from_slice(&len.to_be_bytes());
        }
        Err(_) => {
            out.push(TC_LONGSTRING);
            out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&bytes);
}

/// The serialised `SerializedThrowable` of a failure named `class_name` with `message`, whose
/// printed form (Java's `toString` plus stack) is `stack_trace`.
pub fn serialized_throwable(class_name: &str, message: &str, stack_trace: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + message.len() + stack_trace.len());
    out.extend_from_slice(&STREAM_MAGIC);
    out.extend_from_slice(&STREAM_VERSION);
    out.push(TC_OBJECT);
    for class in &CLASSES {
        out.push(TC_CLASSDESC);
        put_utf(&mut out, class.name);
        out.extend_from_slice(&class.serial_version_uid.to_be_bytes());
        out.push(class.flags);
        out.extend_from_slice(&u16::try_from(class.fields.len()).unwrap_or(0).to_be_bytes());
        for &(code, name, signature) in class.fields {
            out.push(code);
            put_utf(&mut out, name);
            // Object and array fields name their class; a new string each time is as valid as
            // a back reference.
            put_string(&mut out, signature);
        }
        // No class annotations.
        out.push(TC_ENDBLOCKDATA);
    }
    // No superclass above Throwable.
    out.push(TC_NULL);
    // Throwable's fields: no cause, the message, no stack frames, no suppressed exceptions;
    // then the end of what its writeObject wrote.
    out.push(TC_NULL);
    put_string(&mut out, message);
    out.push(TC_NULL);
    out.push(TC_NULL);
    out.push(TC_ENDBLOCKDATA);
    // SerializedThrowable's fields.
    put_string(&mut out, stack_trace);
    put_string(&mut out, class_name);
    out.push(TC_NULL);
    out
}

/// [`serialized_throwable`] in base64, as Flink's `SerializedThrowableSerializer` writes it.
pub(crate) fn serialized_throwable_base64(
    class_name: &str,
    message: &str,
    stack_trace: &str,
) -> String {
    base64::engine::general_purpose::STANDARD.encode(serialized_throwable(
        class_name,
        message,
        stack_trace,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_starts_as_flinks_own() {
        // The first bytes of a SerializedThrowable Flink 1.20.3 wrote, up to the first field's
        // signature string.
        let bytes = serialized_throwable("conflux.JobFailure", "m", "conflux.JobFailure: m");
        let flink: &[u8] = b"\xac\xed\x00\x05sr\x00)org.apache.flink.util.SerializedThrowablee\x16\x9d\xf5\x1f\xa7\x13\xf3\x02\x00\x03L\x00\x19fullStringifiedStackTracet\x00\x12Ljava/lang/String;";
        assert_eq!(&bytes[..flink.len()], flink);
        assert!(bytes.ends_with(b"t\x00\x12conflux.JobFailurep"));
    }

    #[test]
    fn strings_are_modified_utf8() {
        assert_eq!(modified_utf8("a\0b"), b"a\xc0\x80b");
        assert_eq!(modified_utf8("é"), "é".as_bytes());
        // U+1F600 as two surrogates, three bytes each.
        assert_eq!(modified_utf8("😀"), b"\xed\xa0\xbd\xed\xb8\x80");
        let mut long = Vec::new();
        put_string(&mut long, &"x".repeat(70_000));
        assert_eq!(long[0], TC_LONGSTRING);
        assert_eq!(&long[1..9], &70_000u64.to_be_bytes());
    }
}
