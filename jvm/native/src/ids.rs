//! The classes and methods a read calls for every value, looked up once.
//! JNI's `FindClass` and `GetMethodID` cost more than the lookup they
//! serve (the `jni` crate's by-name calls make both on every call), so a
//! value's `Long`, list or map is made through IDs kept here for the
//! library's life: the classes are the JDK's own, which never unload.

use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JMethodID, JObject, JStaticMethodID, JValue, JValueOwned};
use jni::signature::{Primitive, ReturnType};
use jni::sys::jvalue;
use jni::JNIEnv;

use crate::errors::Result;

/// The IDs, and global references to their classes and to `Boolean`'s two
/// values.
pub(crate) struct Ids {
    long: GlobalRef,
    long_value_of: JStaticMethodID,
    double: GlobalRef,
    double_value_of: JStaticMethodID,
    boolean_true: GlobalRef,
    boolean_false: GlobalRef,
    array_list: GlobalRef,
    array_list_new: JMethodID,
    list_add: JMethodID,
    linked_hash_map: GlobalRef,
    linked_hash_map_new: JMethodID,
    map_put: JMethodID,
    map_size: JMethodID,
}

static IDS: OnceLock<Ids> = OnceLock::new();

/// The IDs, looked up at the first call (a race looks them up twice and
/// keeps one set: the same IDs).
pub(crate) fn ids(env: &mut JNIEnv<'_>) -> Result<&'static Ids> {
    if let Some(ids) = IDS.get() {
        return Ok(ids);
    }
    let found = look_up(env)?;
    Ok(IDS.get_or_init(|| found))
}

fn look_up(env: &mut JNIEnv<'_>) -> Result<Ids> {
    let long = env.find_class("java/lang/Long")?;
    let double = env.find_class("java/lang/Double")?;
    let boolean = env.find_class("java/lang/Boolean")?;
    let array_list = env.find_class("java/util/ArrayList")?;
    let linked_hash_map = env.find_class("java/util/LinkedHashMap")?;
    let list = env.find_class("java/util/List")?;
    let map = env.find_class("java/util/Map")?;
    let boolean_true = env
        .get_static_field(&boolean, "TRUE", "Ljava/lang/Boolean;")?
        .l()?;
    let boolean_false = env
        .get_static_field(&boolean, "FALSE", "Ljava/lang/Boolean;")?
        .l()?;
    Ok(Ids {
        long_value_of: env.get_static_method_id(&long, "valueOf", "(J)Ljava/lang/Long;")?,
        double_value_of: env.get_static_method_id(&double, "valueOf", "(D)Ljava/lang/Double;")?,
        array_list_new: env.get_method_id(&array_list, "<init>", "(I)V")?,
        list_add: env.get_method_id(&list, "add", "(Ljava/lang/Object;)Z")?,
        linked_hash_map_new: env.get_method_id(&linked_hash_map, "<init>", "()V")?,
        map_put: env.get_method_id(
            &map,
            "put",
            "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;",
        )?,
        map_size: env.get_method_id(&map, "size", "()I")?,
        long: env.new_global_ref(long)?,
        double: env.new_global_ref(double)?,
        boolean_true: env.new_global_ref(boolean_true)?,
        boolean_false: env.new_global_ref(boolean_false)?,
        array_list: env.new_global_ref(array_list)?,
        linked_hash_map: env.new_global_ref(linked_hash_map)?,
    })
}

fn class(global: &GlobalRef) -> &JClass<'static> {
    <&JClass<'static>>::from(global.as_obj())
}

impl Ids {
    /// `Long.valueOf(i)`.
    pub(crate) fn long<'l>(&self, env: &mut JNIEnv<'l>, i: i64) -> Result<JObject<'l>> {
        // SAFETY: the ID is Long.valueOf(J)Ljava/lang/Long; of this class,
        // and the argument a long.
        let made = unsafe {
            env.call_static_method_unchecked(
                class(&self.long),
                self.long_value_of,
                ReturnType::Object,
                &[jvalue { j: i }],
            )
        }?;
        Ok(made.l()?)
    }

    /// `Double.valueOf(f)`.
    pub(crate) fn double<'l>(&self, env: &mut JNIEnv<'l>, f: f64) -> Result<JObject<'l>> {
        // SAFETY: the ID is Double.valueOf(D)Ljava/lang/Double; of this
        // class, and the argument a double.
        let made = unsafe {
            env.call_static_method_unchecked(
                class(&self.double),
                self.double_value_of,
                ReturnType::Object,
                &[jvalue { d: f }],
            )
        }?;
        Ok(made.l()?)
    }

    /// `Boolean.TRUE` or `Boolean.FALSE`, as a local reference.
    pub(crate) fn boolean<'l>(&self, env: &mut JNIEnv<'l>, b: bool) -> Result<JObject<'l>> {
        let value = if b {
            &self.boolean_true
        } else {
            &self.boolean_false
        };
        Ok(env.new_local_ref(value.as_obj())?)
    }

    /// `new ArrayList(capacity)`.
    pub(crate) fn array_list<'l>(
        &self,
        env: &mut JNIEnv<'l>,
        capacity: i32,
    ) -> Result<JObject<'l>> {
        // SAFETY: the ID is ArrayList's (I)V constructor, and the argument
        // an int.
        Ok(unsafe {
            env.new_object_unchecked(
                class(&self.array_list),
                self.array_list_new,
                &[jvalue { i: capacity }],
            )
        }?)
    }

    /// `list.add(element)`.
    pub(crate) fn add(
        &self,
        env: &mut JNIEnv<'_>,
        list: &JObject<'_>,
        element: &JObject<'_>,
    ) -> Result<()> {
        // SAFETY: `list` is an ArrayList this module made, the ID is List's
        // add(Object)Z, and the argument an object.
        unsafe {
            env.call_method_unchecked(
                list,
                self.list_add,
                ReturnType::Primitive(Primitive::Boolean),
                &[JValue::Object(element).as_jni()],
            )
        }?;
        Ok(())
    }

    /// `new LinkedHashMap()`.
    pub(crate) fn linked_hash_map<'l>(&self, env: &mut JNIEnv<'l>) -> Result<JObject<'l>> {
        // SAFETY: the ID is LinkedHashMap's ()V constructor.
        Ok(unsafe {
            env.new_object_unchecked(class(&self.linked_hash_map), self.linked_hash_map_new, &[])
        }?)
    }

    /// `map.put(key, value)`: the value it replaced.
    pub(crate) fn put<'l>(
        &self,
        env: &mut JNIEnv<'l>,
        map: &JObject<'_>,
        key: &JObject<'_>,
        value: &JObject<'_>,
    ) -> Result<JObject<'l>> {
        // SAFETY: `map` is a LinkedHashMap this module made, the ID is
        // Map's put(Object, Object)Object, and the arguments objects.
        let replaced: JValueOwned<'l> = unsafe {
            env.call_method_unchecked(
                map,
                self.map_put,
                ReturnType::Object,
                &[JValue::Object(key).as_jni(), JValue::Object(value).as_jni()],
            )
        }?;
        Ok(replaced.l()?)
    }

    /// `map.size()`.
    pub(crate) fn size(&self, env: &mut JNIEnv<'_>, map: &JObject<'_>) -> Result<i32> {
        // SAFETY: `map` is a LinkedHashMap this module made, and the ID is
        // Map's size()I.
        let size = unsafe {
            env.call_method_unchecked(
                map,
                self.map_size,
                ReturnType::Primitive(Primitive::Int),
                &[],
            )
        }?;
        Ok(size.i()?)
    }
}
