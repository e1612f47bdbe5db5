//! The few Java objects every part of the binding makes or asks about:
//! boxed numbers and booleans, and an object's class name.

use jni::objects::{JObject, JString, JValue};
use jni::JNIEnv;

use crate::errors::Result;
use crate::ids::ids;

/// `Long.valueOf(i)`.
pub(crate) fn long<'l>(env: &mut JNIEnv<'l>, i: i64) -> Result<JObject<'l>> {
    ids(env)?.long(env, i)
}

/// `Double.valueOf(f)`.
pub(crate) fn double<'l>(env: &mut JNIEnv<'l>, f: f64) -> Result<JObject<'l>> {
    ids(env)?.double(env, f)
}

/// `Boolean.TRUE` or `Boolean.FALSE`.
pub(crate) fn boolean<'l>(env: &mut JNIEnv<'l>, b: bool) -> Result<JObject<'l>> {
    ids(env)?.boolean(env, b)
}

/// A `String` of `text`, made from its UTF-16 (JNI's `NewString`): the
/// `jni` crate's `new_string` converts to modified UTF-8 in an allocation
/// of its own first, and the JVM then decodes that. Short texts (most
/// values and keys) are converted on the stack.
pub(crate) fn string<'l>(env: &mut JNIEnv<'l>, text: &str) -> Result<JObject<'l>> {
    let mut stack = [0u16; 128];
    let mut heap = Vec::new();
    let units: &[u16] = if text.len() <= stack.len() {
        // UTF-16 has at most as many units as UTF-8 has bytes.
        let mut n = 0;
        for unit in text.encode_utf16() {
            stack[n] = unit;
            n += 1;
        }
        &stack[..n]
    } else {
        heap.extend(text.encode_utf16());
        &heap
    };
    let len = jni::sys::jsize::try_from(units.len()).map_err(|_| {
        crate::errors::Failure::Hashfile(hashfile::Error::InvalidArgument {
            message: format!(
                "a text of {} UTF-16 units is past a Java String's length",
                units.len()
            ),
        })
    })?;
    let raw = env.get_raw();
    // SAFETY: `raw` is this thread's live JNIEnv (from `env`); NewString is
    // in every JNI function table (1.1 on), and reads `len` units from
    // `units`, which holds that many.
    let made = unsafe {
        let new_string = (**raw).NewString.expect("JNI 1.1 has NewString");
        new_string(raw, units.as_ptr(), len)
    };
    if made.is_null() {
        // The JVM threw (OutOfMemoryError); `run` leaves it pending.
        return Err(jni::errors::Error::JavaException.into());
    }
    // SAFETY: `made` is a new local reference NewString returned.
    Ok(unsafe { JObject::from_raw(made) })
}

/// The name of `object`'s class (`java.util.Date`), for messages.
pub(crate) fn class_name(env: &mut JNIEnv<'_>, object: &JObject<'_>) -> Result<String> {
    let class = env
        .call_method(object, "getClass", "()Ljava/lang/Class;", &[])?
        .l()?;
    let name = env
        .call_method(&class, "getName", "()Ljava/lang/String;", &[])?
        .l()?;
    Ok(env.get_string(&JString::from(name))?.into())
}

/// The UTF-8 bytes of a `String`, as `Native.utf8` gives them: a lone
/// surrogate, which has none, is the `IllegalArgumentException` it throws
/// (JNI's own conversion would put U+FFFD in its place: another key).
pub(crate) fn utf8(env: &mut JNIEnv<'_>, s: &JObject<'_>) -> Result<Vec<u8>> {
    let bytes = env
        .call_static_method(
            "dev/hashfile/Native",
            "utf8",
            "(Ljava/lang/String;)[B",
            &[JValue::Object(s)],
        )?
        .l()?;
    let bytes = jni::objects::JByteArray::from(bytes);
    let out = env.convert_byte_array(&bytes)?;
    env.delete_local_ref(bytes)?;
    Ok(out)
}

/// A `String`'s text, by [`utf8`]'s strict conversion.
pub(crate) fn text(env: &mut JNIEnv<'_>, s: &JObject<'_>) -> Result<String> {
    // `Native.utf8` made the bytes from a valid UTF-16 string.
    Ok(String::from_utf8(utf8(env, s)?).unwrap_or_default())
}
