//! Java objects to typed values (`hashfile::value::Value`): the reverse of
//! `decode`, so a store built from Java reads the same from Ruby and
//! Python. A refusal is the core's (`value::Unencodable`), worded as every
//! language words it.

use hashfile::value::{MapKeys, Unencodable, Value, MAX_DEPTH};
use jni::objects::{JByteArray, JObject, JObjectArray, JValue};
use jni::JNIEnv;

use crate::errors::{Failure, Result};
use crate::objects;

/// What Java's encoder stores, for [`Unencodable::for_key`]'s message.
const STORES: &str = "null, Boolean, Long, Integer, Short, Byte, BigInteger, Double, Float, String, byte[], List and Map (convert other objects to these first)";

/// `object` as a value; `key` names the entry in errors.
pub(crate) fn value(env: &mut JNIEnv<'_>, object: &JObject<'_>, key: &[u8]) -> Result<Value> {
    encode(env, object, MAX_DEPTH).map_err(|e| match e {
        Refused::Java(e) => e,
        Refused::Value(refused) => Failure::Hashfile(refused.for_key(key, STORES)),
    })
}

/// Why an object could not be encoded: an exception Java threw, or the
/// core's refusal.
enum Refused {
    Java(Failure),
    Value(Unencodable),
}

impl<E: Into<Failure>> From<E> for Refused {
    fn from(e: E) -> Self {
        Refused::Java(e.into())
    }
}

impl Refused {
    fn inside(self, step: impl FnOnce(Unencodable) -> Unencodable) -> Refused {
        match self {
            Refused::Value(refused) => Refused::Value(step(refused)),
            java => java,
        }
    }
}

fn is(
    env: &mut JNIEnv<'_>,
    object: &JObject<'_>,
    class: &str,
) -> std::result::Result<bool, Refused> {
    Ok(env.is_instance_of(object, class)?)
}

/// `object` encoded, with containers allowed `depth_left` levels more.
fn encode(
    env: &mut JNIEnv<'_>,
    object: &JObject<'_>,
    depth_left: usize,
) -> std::result::Result<Value, Refused> {
    if object.is_null() {
        return Ok(Value::Nil);
    }
    if is(env, object, "java/lang/Boolean")? {
        return Ok(Value::Bool(
            env.call_method(object, "booleanValue", "()Z", &[])?.z()?,
        ));
    }
    if is(env, object, "java/lang/String")? {
        return Ok(Value::Str(objects::utf8(env, object)?, None));
    }
    if is(env, object, "[B")? {
        let bytes = env.convert_byte_array(JByteArray::from(env.new_local_ref(object)?))?;
        return Ok(Value::Str(bytes, Some("ASCII-8BIT".into())));
    }
    if is(env, object, "java/lang/Long")?
        || is(env, object, "java/lang/Integer")?
        || is(env, object, "java/lang/Short")?
        || is(env, object, "java/lang/Byte")?
    {
        return Ok(Value::Int(
            env.call_method(object, "longValue", "()J", &[])?.j()?,
        ));
    }
    if is(env, object, "java/math/BigInteger")? {
        if env.call_method(object, "bitLength", "()I", &[])?.i()? < 64 {
            return Ok(Value::Int(
                env.call_method(object, "longValue", "()J", &[])?.j()?,
            ));
        }
        let negative = env.call_method(object, "signum", "()I", &[])?.i()? < 0;
        let magnitude = env
            .call_method(object, "abs", "()Ljava/math/BigInteger;", &[])?
            .l()?;
        let bytes = env
            .call_method(&magnitude, "toByteArray", "()[B", &[])?
            .l()?;
        let mut bytes = env.convert_byte_array(JByteArray::from(bytes))?;
        // Big-endian with a sign byte; the codec takes the magnitude
        // little-endian, without trailing zeros.
        bytes.reverse();
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        return Ok(Value::BigInt {
            negative,
            magnitude: bytes,
        });
    }
    if is(env, object, "java/lang/Double")? || is(env, object, "java/lang/Float")? {
        return Ok(Value::Float(
            env.call_method(object, "doubleValue", "()D", &[])?.d()?,
        ));
    }
    let is_map = is(env, object, "java/util/Map")?;
    let is_list = is(env, object, "java/util/List")?;
    if !is_map && !is_list {
        return Err(Refused::Value(Unencodable::object(objects::class_name(
            env, object,
        )?)));
    }
    let depth = depth_left
        .checked_sub(1)
        .ok_or(Refused::Value(Unencodable::too_deep()))?;
    // A snapshot of the items, taken by Java (`Native.pairs`, `toArray`),
    // so code run meanwhile cannot change what is walked.
    let items = if is_map {
        env.call_static_method(
            "dev/hashfile/Native",
            "pairs",
            "(Ljava/util/Map;)[Ljava/lang/Object;",
            &[JValue::Object(object)],
        )?
        .l()?
    } else {
        env.call_method(object, "toArray", "()[Ljava/lang/Object;", &[])?
            .l()?
    };
    if items.is_null() {
        return Err(Refused::Java(Failure::Hashfile(
            hashfile::Error::InvalidArgument {
                message: format!(
                    "a {} whose toArray() returned null",
                    objects::class_name(env, object)?
                ),
            },
        )));
    }
    let items = JObjectArray::from(items);
    let len = env.get_array_length(&items)? as usize;
    if is_map {
        let mut keys = MapKeys::default();
        let mut pairs = Vec::with_capacity(len / 2);
        for pair in 0..len / 2 {
            let k =
                element(env, &items, 2 * pair, depth).map_err(|e| e.inside(|u| u.in_key(pair)))?;
            keys.add(&k).map_err(Refused::Value)?;
            let v = element(env, &items, 2 * pair + 1, depth)
                .map_err(|e| e.inside(|u| u.in_value_of_key(&k)))?;
            pairs.push((k, v));
        }
        return Ok(Value::Map(pairs));
    }
    let mut list = Vec::with_capacity(len);
    for i in 0..len {
        list.push(element(env, &items, i, depth).map_err(|e| e.inside(|u| u.in_element(i)))?);
    }
    Ok(Value::Array(list))
}

/// Item `index` of `items`, encoded in a local frame of its own: the
/// references it makes go with it, however deep it nests.
fn element(
    env: &mut JNIEnv<'_>,
    items: &JObjectArray<'_>,
    index: usize,
    depth: usize,
) -> std::result::Result<Value, Refused> {
    env.with_local_frame(16, |env| -> std::result::Result<Value, Refused> {
        let item = env.get_object_array_element(items, index as i32)?;
        encode(env, &item, depth)
    })
}
