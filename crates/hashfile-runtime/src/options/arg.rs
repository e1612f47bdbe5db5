//! `Arg`: an option's value as a binding hands it over, in no language's
//! types, so that one table checks every language's options alike.

/// An option's value, converted by a binding from its language's object
/// without judging it: a Ruby Symbol is a `Symbol`, a Python `str` or a
/// Ruby String a `Text`, `nil` and `None` are `Nil`. Anything else
/// (a callable, a class) is `Object`, with the language's name for its
/// type, and is judged by the option it was given for.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// `nil`, `None`: an option given as nothing takes its default.
    Nil,
    /// `true`, `false`.
    Bool(bool),
    /// An integer that fits in 128 bits.
    Int(i128),
    /// An integer past 128 bits, in decimal (a Ruby Bignum, a Python int).
    BigInt(String),
    /// A floating-point number.
    Float(f64),
    /// A string of text.
    Text(String),
    /// A Ruby Symbol.
    Symbol(String),
    /// An Array or list.
    List(Vec<Arg>),
    /// A Hash or dict, in its order.
    Map(Vec<(Arg, Arg)>),
    /// Any other object: the language's name for its type. The binding
    /// keeps the object itself (a serializer, a progress callable).
    Object(String),
}

impl Arg {
    /// What this is, in words every language's users read alike, for
    /// messages: "a string", "an integer".
    pub fn describe(&self) -> String {
        match self {
            Arg::Nil => "nothing (nil, None)".into(),
            Arg::Bool(_) => "a boolean".into(),
            Arg::Int(_) | Arg::BigInt(_) => "an integer".into(),
            Arg::Float(_) => "a float".into(),
            Arg::Text(_) => "a string".into(),
            Arg::Symbol(_) => "a symbol".into(),
            Arg::List(_) => "a list".into(),
            Arg::Map(_) => "a map".into(),
            Arg::Object(type_name) => format!("an object of {type_name}"),
        }
    }

    /// Whether this is `Nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Arg::Nil)
    }

    /// The value as the user wrote it, for messages that quote it.
    pub fn show(&self) -> String {
        match self {
            Arg::Nil => "nil".into(),
            Arg::Bool(b) => b.to_string(),
            Arg::Int(i) => i.to_string(),
            Arg::BigInt(digits) => digits.clone(),
            Arg::Float(f) => f.to_string(),
            Arg::Text(t) => format!("{t:?}"),
            Arg::Symbol(s) => format!(":{s}"),
            Arg::List(_) | Arg::Map(_) | Arg::Object(_) => self.describe(),
        }
    }
}
