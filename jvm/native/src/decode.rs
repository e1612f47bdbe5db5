//! Records to Java objects, built from the core's walk (`value::walk`),
//! whose checks every language's decoder makes:
//!
//! | stored (as Ruby writes it) | Java |
//! | --- | --- |
//! | UTF-8 or US-ASCII string, Symbol | `String` |
//! | binary string | `byte[]` |
//! | string in another encoding | `String` if its bytes are UTF-8, else `byte[]` |
//! | Integer | `Long`, or `BigInteger` past 64 bits |
//! | Float | `Double` |
//! | true, false, nil | `Boolean.TRUE`, `Boolean.FALSE`, `null` |
//! | Array | `ArrayList` |
//! | Hash | `LinkedHashMap`, in stored order |
//! | a Ruby serializer's bytes | `byte[]` |
//!
//! A map whose keys are distinct as stored but equal in Java (the String
//! `"a"` and the Symbol `:a`) is refused, naming them (`KeysCollide`),
//! never a map that silently kept one.

use hashfile::value::{self as codec, join_items, walk, Container, Encoding, Item, MAX_DEPTH};
use hashfile::{Record, ValueKind};
use jni::objects::{JObject, JValue};
use jni::JNIEnv;

use crate::errors::{Failure, Result};
use crate::ids::ids;
use crate::objects;

/// The value of `record`, of the store at `location` (which damage in it
/// is reported under, with the key).
pub(crate) fn value<'l>(
    env: &mut JNIEnv<'l>,
    record: &Record<'_>,
    location: &str,
) -> Result<JObject<'l>> {
    match record.kind {
        ValueKind::Utf8 | ValueKind::Ascii => text(env, record.value),
        ValueKind::Binary => Ok(env.byte_array_from_slice(record.value)?.into()),
        ValueKind::Typed => {
            let mut objects = Objects::at(env, record.key, location);
            let built = walk::value(&mut objects, record.value);
            objects.unwind(built)
        }
        other => Err(Failure::Hashfile(hashfile::Error::InvalidArgument {
            message: format!("a value of a kind this release does not know ({other:?})"),
        })),
    }
}

/// A key: `String` if stored as UTF-8 text, else `byte[]`.
pub(crate) fn key<'l>(env: &mut JNIEnv<'l>, utf8: bool, bytes: &[u8]) -> Result<JObject<'l>> {
    if utf8 {
        text(env, bytes)
    } else {
        Ok(env.byte_array_from_slice(bytes)?.into())
    }
}

/// `String` of UTF-8 bytes, or `byte[]` if they are not UTF-8.
fn text<'l>(env: &mut JNIEnv<'l>, bytes: &[u8]) -> Result<JObject<'l>> {
    match std::str::from_utf8(bytes) {
        Ok(s) => objects::string(env, s),
        Err(_) => Ok(env.byte_array_from_slice(bytes)?.into()),
    }
}

/// Builds Java objects from the core's walk, for the record of a key in
/// the store at a location (which damage is reported under).
///
/// Each container is built in a local frame of its own (pushed when it is
/// made, popped by `finish` with the container kept), so the references a
/// deep value makes never pile up in one frame; `unwind` pops the frames
/// a failed walk left.
pub(crate) struct Objects<'e, 'l, 'a> {
    env: &'e mut JNIEnv<'l>,
    place: Option<(&'a [u8], &'a str)>,
    frames: usize,
}

impl<'e, 'l, 'a> Objects<'e, 'l, 'a> {
    pub(crate) fn at(env: &'e mut JNIEnv<'l>, key: &'a [u8], location: &'a str) -> Self {
        Objects {
            env,
            place: Some((key, location)),
            frames: 0,
        }
    }

    /// The environment the objects are made in.
    pub(crate) fn env(&mut self) -> &mut JNIEnv<'l> {
        self.env
    }

    /// `built`, after popping the frames a failed walk left open.
    pub(crate) fn unwind<T>(&mut self, built: Result<T>) -> Result<T> {
        while self.frames > 0 {
            self.frames -= 1;
            // SAFETY: the walk failed, so nothing it made in these frames
            // is used again.
            unsafe { self.env.pop_local_frame(&JObject::null()) }?;
        }
        built
    }

    /// A new local frame for a container's references.
    fn frame(&mut self) -> Result<()> {
        self.env.push_local_frame(16)?;
        self.frames += 1;
        Ok(())
    }
}

impl<'l> walk::Build for Objects<'_, 'l, '_> {
    type Value = JObject<'l>;
    type Error = Failure;

    fn error(&mut self, e: hashfile::Error) -> Failure {
        Failure::Hashfile(match self.place {
            Some((key, location)) => e
                .in_value_for(key)
                .with_path(std::path::Path::new(location)),
            None => e,
        })
    }

    fn leaf(&mut self, item: &Item<'_>) -> Result<JObject<'l>> {
        let env = &mut *self.env;
        Ok(match *item {
            Item::Nil => JObject::null(),
            Item::Bool(b) => return objects::boolean(env, b),
            Item::Int(i) => return objects::long(env, i),
            Item::BigInt {
                negative,
                magnitude,
            } => {
                let big_endian: Vec<u8> = magnitude.iter().rev().copied().collect();
                let bytes = env.byte_array_from_slice(&big_endian)?;
                let signum = if negative { -1 } else { 1 };
                let big = env.new_object(
                    "java/math/BigInteger",
                    "(I[B)V",
                    &[JValue::Int(signum), JValue::Object(&bytes)],
                )?;
                env.delete_local_ref(bytes)?;
                big
            }
            Item::Float(f) => return objects::double(env, f),
            Item::Str(bytes, Encoding::Binary) | Item::Custom(bytes) => {
                env.byte_array_from_slice(bytes)?.into()
            }
            Item::Str(bytes, _) | Item::Symbol(bytes, _) => return text(env, bytes),
            Item::Array(_) | Item::Map(_) => unreachable!("the walk builds containers"),
        })
    }

    fn array(&mut self, len: u64) -> Result<JObject<'l>> {
        // The length is bounded by the body (checked by the cursor); a
        // capacity past an int is left to the list to grow to.
        let capacity = i32::try_from(len).unwrap_or(0);
        self.frame()?;
        ids(self.env)?.array_list(self.env, capacity)
    }

    fn push(&mut self, list: &mut JObject<'l>, element: JObject<'l>) -> Result<()> {
        ids(self.env)?.add(self.env, list, &element)?;
        // Each element a local reference no more: a big list would fill
        // the frame's table.
        self.env.delete_local_ref(element)?;
        Ok(())
    }

    fn map(&mut self, _len: u64) -> Result<JObject<'l>> {
        self.frame()?;
        ids(self.env)?.linked_hash_map(self.env)
    }

    fn insert(
        &mut self,
        map: &mut JObject<'l>,
        key: JObject<'l>,
        value: JObject<'l>,
        stored: Container<'_>,
    ) -> Result<()> {
        let ids = ids(self.env)?;
        let before = ids.size(self.env, map)?;
        let replaced = ids.put(self.env, map, &key, &value)?;
        self.env.delete_local_ref(replaced)?;
        self.env.delete_local_ref(value)?;
        let after = ids.size(self.env, map)?;
        // Equal in Java, distinct as stored: the map replaced a value,
        // which is never done silently.
        if after == before {
            self.collision(stored, &key)?;
        }
        self.env.delete_local_ref(key)?;
        Ok(())
    }

    fn finish(&mut self, container: JObject<'l>) -> Result<JObject<'l>> {
        self.frames -= 1;
        // SAFETY: the container's items were deleted as they went in; the
        // container itself comes back as a reference in the frame below.
        Ok(unsafe { self.env.pop_local_frame(&container) }?)
    }
}

impl Objects<'_, '_, '_> {
    /// An error if the stored keys of `c` equal to `key` in Java are not one
    /// key as stored too (a map may repeat a key: its last value wins).
    fn collision(&mut self, c: Container<'_>, key: &JObject<'_>) -> Result<()> {
        let mut equal = Vec::new();
        let mut inner = c.cursor();
        for _ in 0..c.len {
            let stored = inner.clone().next_item()?;
            let place = self.place.take();
            let k = walk::next(self, &mut inner, MAX_DEPTH);
            self.place = place;
            let k = k?;
            let same = if key.is_null() {
                k.is_null()
            } else {
                self.env
                    .call_method(
                        key,
                        "equals",
                        "(Ljava/lang/Object;)Z",
                        &[JValue::Object(&k)],
                    )?
                    .z()?
            };
            self.env.delete_local_ref(k)?;
            if same {
                equal.push(stored);
            }
            inner.skip()?;
        }
        if equal.iter().all(|k| codec::same_key(k, &equal[0])) {
            return Ok(());
        }
        Err(Failure::Hashfile(hashfile::Error::KeysCollide {
            keys: join_items(&equal),
            language: "Java",
        }))
    }
}
