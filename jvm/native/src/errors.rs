//! Errors as Java exceptions: the class the runtime decided
//! (`hashfile_runtime::error_class`) made by the Java side's one factory,
//! `dev.hashfile.Errors`, then thrown. A native method that fails returns a
//! placeholder; the JVM raises the pending exception when it returns.

use hashfile_runtime::error_class::{classify, Attr, Class};
use jni::objects::{JObject, JValue};
use jni::JNIEnv;

use crate::objects;

/// Why a native call failed: a Java exception already pending (thrown by a
/// JNI call, or by Java code it ran), or an error of the crates.
#[derive(Debug)]
pub(crate) enum Failure {
    Java(jni::errors::Error),
    Hashfile(hashfile::Error),
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Java(e)
    }
}

impl From<hashfile::Error> for Failure {
    fn from(e: hashfile::Error) -> Self {
        Failure::Hashfile(e)
    }
}

pub(crate) type Result<T> = std::result::Result<T, Failure>;

/// Throws `failure` as its Java exception, unless one is pending already.
pub(crate) fn throw(env: &mut JNIEnv<'_>, failure: Failure) {
    if env.exception_check().unwrap_or(true) {
        return;
    }
    let error = match failure {
        Failure::Hashfile(e) => e,
        Failure::Java(e) => {
            let _ = env.throw_new("dev/hashfile/HashfileException", format!("JNI: {e}"));
            return;
        }
    };
    let raised = classify(&error);
    let made = make(env, &raised.class, &raised.message, &raised.attributes);
    match made {
        Ok(exception) => {
            let _ = env.throw(jni::objects::JThrowable::from(exception));
        }
        Err(_) if env.exception_check().unwrap_or(true) => {}
        Err(_) => {
            let _ = env.throw_new("dev/hashfile/HashfileException", raised.message);
        }
    }
}

/// The exception `Errors.make(kind, message, errno, attributes)` returns.
fn make<'l>(
    env: &mut JNIEnv<'l>,
    class: &Class,
    message: &str,
    attributes: &[(&'static str, Attr)],
) -> Result<JObject<'l>> {
    let (kind, errno, path) = match class {
        Class::Own(name) => (*name, -1, None),
        Class::Argument => ("Argument", -1, None),
        Class::Type => ("Type", -1, None),
        Class::UnknownOption => ("UnknownOption", -1, None),
        Class::NoMemory => ("NoMemory", -1, None),
        Class::Os { errno, path } => ("Os", errno.unwrap_or(-1), path.clone()),
    };
    let pairs = env.new_object_array(
        2 * attributes.len() as i32 + 2,
        "java/lang/Object",
        JObject::null(),
    )?;
    let mut at = 0;
    let path_value = match path {
        Some(p) => JObject::from(env.new_string(p)?),
        None => JObject::null(),
    };
    let path_name = env.new_string("path")?;
    env.set_object_array_element(&pairs, at, &path_name)?;
    env.set_object_array_element(&pairs, at + 1, &path_value)?;
    at += 2;
    for (name, value) in attributes {
        let name = env.new_string(name)?;
        let value = match value {
            Attr::Nil => JObject::null(),
            Attr::Text(t) => JObject::from(env.new_string(t)?),
            Attr::Int(i) => objects::long(env, *i as i64)?,
            Attr::Bytes(b) => JObject::from(env.byte_array_from_slice(b)?),
        };
        env.set_object_array_element(&pairs, at, &name)?;
        env.set_object_array_element(&pairs, at + 1, &value)?;
        at += 2;
    }
    let kind = env.new_string(kind)?;
    let message = env.new_string(message)?;
    Ok(env
        .call_static_method(
            "dev/hashfile/Errors",
            "make",
            "(Ljava/lang/String;Ljava/lang/String;I[Ljava/lang/Object;)Ljava/lang/RuntimeException;",
            &[
                JValue::Object(&kind),
                JValue::Object(&message),
                JValue::Int(errno),
                JValue::Object(&pairs),
            ],
        )?
        .l()?)
}
