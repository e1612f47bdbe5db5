//! The few Java objects every part of the binding makes or asks about:
//! boxed numbers and booleans, and an object's class name.

use jni::objects::{JObject, JString, JValue};
use jni::JNIEnv;

use crate::errors::Result;

/// `Long.valueOf(i)`.
pub(crate) fn long<'l>(env: &mut JNIEnv<'l>, i: i64) -> Result<JObject<'l>> {
    Ok(env
        .call_static_method(
            "java/lang/Long",
            "valueOf",
            "(J)Ljava/lang/Long;",
            &[JValue::Long(i)],
        )?
        .l()?)
}

/// `Double.valueOf(f)`.
pub(crate) fn double<'l>(env: &mut JNIEnv<'l>, f: f64) -> Result<JObject<'l>> {
    Ok(env
        .call_static_method(
            "java/lang/Double",
            "valueOf",
            "(D)Ljava/lang/Double;",
            &[JValue::Double(f)],
        )?
        .l()?)
}

/// `Boolean.TRUE` or `Boolean.FALSE`.
pub(crate) fn boolean<'l>(env: &mut JNIEnv<'l>, b: bool) -> Result<JObject<'l>> {
    Ok(env
        .get_static_field(
            "java/lang/Boolean",
            if b { "TRUE" } else { "FALSE" },
            "Ljava/lang/Boolean;",
        )?
        .l()?)
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
