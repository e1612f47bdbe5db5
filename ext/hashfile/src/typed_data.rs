//! The Rust value inside a wrapped Ruby object, found without `rb_protect`.
//!
//! magnus's `&Self` receiver converts through `rb_protect` (a `setjmp`) on
//! every call, which costs as much as a lookup. The hot methods take `self`
//! as a plain `Value` and unwrap it here instead. This relies on how magnus
//! wraps data (a typed `T_DATA` whose type pointer is `T::data_type()`),
//! so it has its own test.

use magnus::{rb_sys::AsRawValue, typed_data::DataType, Error, RTypedData, Ruby, TypedData, Value};
use rb_sys::StableApiDefinition;

/// The `T` inside `value`, which must be typed data wrapped by magnus with
/// exactly `T`'s data type; a `TypeError` naming `what` otherwise.
#[inline]
pub(crate) fn unwrap_self<'a, T: TypedData>(
    ruby: &Ruby,
    value: Value,
    what: &str,
) -> Result<&'a T, Error> {
    if RTypedData::from_value(value).is_some() {
        let api = rb_sys::stable_api::get_default();
        let expected = T::data_type() as *const DataType as *const rb_sys::rb_data_type_t;
        // SAFETY: `value` is a typed T_DATA object (checked above), so its
        // type and data fields can be read. DataType is repr(transparent)
        // over rb_data_type_t, so equal pointers mean the data is a `T`,
        // wrapped by magnus. The reference lives as long as the receiver,
        // which the VM keeps alive for the whole method call.
        unsafe {
            if api.rtypeddata_type(value.as_raw()) == expected {
                if let Some(data) = (api.rtypeddata_get_data(value.as_raw()) as *const T).as_ref() {
                    return Ok(data);
                }
            }
        }
    }
    Err(crate::error::type_error(
        ruby,
        format!("expected a {what}, got {}", crate::error::class_name(value)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use magnus::{prelude::*, IntoValue};

    #[magnus::wrap(class = "UnwrapTestA")]
    struct A(u64);

    #[magnus::wrap(class = "UnwrapTestB")]
    struct B(#[allow(dead_code)] u64);

    /// The wrapped value of the right type comes back; an object of
    /// another wrapped type, or one that is no typed data at all, is a
    /// TypeError, never a misread.
    #[test]
    fn unwrap_self_takes_only_its_own_type() {
        // SAFETY: the only Ruby VM of this test process, started once here.
        let _cleanup = unsafe { magnus::embed::init() };
        let ruby = Ruby::get().unwrap();
        ruby.define_class("UnwrapTestA", ruby.class_object())
            .unwrap();
        ruby.define_class("UnwrapTestB", ruby.class_object())
            .unwrap();
        let a = A(42).into_value_with(&ruby);
        let b = B(7).into_value_with(&ruby);
        assert_eq!(unwrap_self::<A>(&ruby, a, "A").unwrap().0, 42);
        for (other, class) in [
            (b, "UnwrapTestB"),
            (ruby.str_new("not data").as_value(), "String"),
            (ruby.qnil().as_value(), "NilClass"),
            (ruby.integer_from_i64(1).as_value(), "Integer"),
        ] {
            let error = unwrap_self::<A>(&ruby, other, "A").map(|_| ()).unwrap_err();
            assert!(error.is_kind_of(ruby.exception_type_error()), "{error}");
            assert_eq!(
                error.to_string(),
                format!("TypeError: expected a A, got {class}")
            );
        }
    }
}
