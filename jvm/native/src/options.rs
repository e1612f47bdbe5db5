//! Options from Java, converted into the runtime's `Arg`s: the runtime's
//! table judges them (names, types, ranges), as it does every binding's.
//! Java passes a `Map<String, ?>` as an `Object[]` of name, value pairs.

use hashfile_runtime::options::Arg;
use jni::objects::{JObject, JObjectArray, JString};
use jni::JNIEnv;

use crate::errors::Result;
use crate::objects;

/// Containers inside an option nested deeper than this are not read: no
/// option takes more than a list of texts or a map of headers.
const MAX_NESTING: usize = 4;

/// The options given as `pairs` (null: none).
pub(crate) fn given(env: &mut JNIEnv<'_>, pairs: &JObjectArray<'_>) -> Result<Vec<(String, Arg)>> {
    let mut out = Vec::new();
    if pairs.is_null() {
        return Ok(out);
    }
    let len = env.get_array_length(pairs)?;
    for i in (0..len - 1).step_by(2) {
        let name = env.get_object_array_element(pairs, i)?;
        if name.is_null() || !env.is_instance_of(&name, "java/lang/String")? {
            return Err(crate::errors::Failure::Hashfile(
                hashfile::Error::InvalidArgument {
                    message: "option names are Strings".into(),
                },
            ));
        }
        let name_text = objects::text(env, &name)?;
        env.delete_local_ref(name)?;
        let name = name_text;
        let value = env.get_object_array_element(pairs, i + 1)?;
        out.push((name, arg(env, &value, 0)?));
        env.delete_local_ref(value)?;
    }
    Ok(out)
}

/// A Java object as an `Arg`, without judging it.
pub(crate) fn arg(env: &mut JNIEnv<'_>, value: &JObject<'_>, depth: usize) -> Result<Arg> {
    if value.is_null() {
        return Ok(Arg::Nil);
    }
    if env.is_instance_of(value, "java/lang/Boolean")? {
        return Ok(Arg::Bool(
            env.call_method(value, "booleanValue", "()Z", &[])?.z()?,
        ));
    }
    if env.is_instance_of(value, "java/lang/Long")?
        || env.is_instance_of(value, "java/lang/Integer")?
        || env.is_instance_of(value, "java/lang/Short")?
        || env.is_instance_of(value, "java/lang/Byte")?
    {
        return Ok(Arg::Int(
            env.call_method(value, "longValue", "()J", &[])?.j()?.into(),
        ));
    }
    if env.is_instance_of(value, "java/math/BigInteger")? {
        let text = env
            .call_method(value, "toString", "()Ljava/lang/String;", &[])?
            .l()?;
        let text: String = env.get_string(&JString::from(text))?.into();
        return Ok(match text.parse::<i128>() {
            Ok(i) => Arg::Int(i),
            Err(_) => Arg::BigInt(text),
        });
    }
    if env.is_instance_of(value, "java/lang/Double")?
        || env.is_instance_of(value, "java/lang/Float")?
    {
        return Ok(Arg::Float(
            env.call_method(value, "doubleValue", "()D", &[])?.d()?,
        ));
    }
    if env.is_instance_of(value, "java/lang/String")? {
        return Ok(Arg::Text(objects::text(env, value)?));
    }
    if depth < MAX_NESTING {
        if env.is_instance_of(value, "java/util/List")? {
            let array = env
                .call_method(value, "toArray", "()[Ljava/lang/Object;", &[])?
                .l()?;
            let array = JObjectArray::from(array);
            let len = env.get_array_length(&array)?;
            let mut items = Vec::with_capacity(len as usize);
            for i in 0..len {
                let item = env.get_object_array_element(&array, i)?;
                items.push(arg(env, &item, depth + 1)?);
                env.delete_local_ref(item)?;
            }
            return Ok(Arg::List(items));
        }
        if env.is_instance_of(value, "java/util/Map")? {
            let pairs = env
                .call_static_method(
                    "dev/hashfile/Native",
                    "pairs",
                    "(Ljava/util/Map;)[Ljava/lang/Object;",
                    &[jni::objects::JValue::Object(value)],
                )?
                .l()?;
            let pairs = JObjectArray::from(pairs);
            let len = env.get_array_length(&pairs)?;
            let mut out = Vec::with_capacity(len as usize / 2);
            for i in (0..len - 1).step_by(2) {
                let k = env.get_object_array_element(&pairs, i)?;
                let v = env.get_object_array_element(&pairs, i + 1)?;
                out.push((arg(env, &k, depth + 1)?, arg(env, &v, depth + 1)?));
                env.delete_local_ref(k)?;
                env.delete_local_ref(v)?;
            }
            return Ok(Arg::Map(out));
        }
    }
    Ok(Arg::Object(objects::class_name(env, value)?))
}

/// The Java object for an `Arg` that `from_text` makes.
pub(crate) fn object<'l>(env: &mut JNIEnv<'l>, arg: &Arg) -> Result<JObject<'l>> {
    Ok(match arg {
        Arg::Int(i) => match i64::try_from(*i) {
            Ok(i) => objects::long(env, i)?,
            Err(_) => env.new_string(i.to_string())?.into(),
        },
        Arg::Float(f) => objects::double(env, *f)?,
        Arg::Bool(b) => objects::boolean(env, *b)?,
        Arg::List(items) => {
            let list = env.new_object("java/util/ArrayList", "()V", &[])?;
            for item in items {
                let item = object(env, item)?;
                env.call_method(
                    &list,
                    "add",
                    "(Ljava/lang/Object;)Z",
                    &[jni::objects::JValue::Object(&item)],
                )?;
                env.delete_local_ref(item)?;
            }
            list
        }
        Arg::Text(t) | Arg::Symbol(t) | Arg::BigInt(t) | Arg::Object(t) => {
            env.new_string(t)?.into()
        }
        Arg::Nil | Arg::Map(_) => JObject::null(),
    })
}
