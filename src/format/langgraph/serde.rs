//! LangGraph's `JsonPlusSerializer`, the reading half: a value stored as
//! `(type, bytes)` (`checkpoints.type` + `checkpoint`, `writes.type` +
//! `value`). `msgpack` is msgpack written by `ormsgpack` with LangGraph's
//! ext types; `json` its older JSON form; `null`, `bytes`, `bytearray`
//! what their names say; `pickle` (the `pickle_fallback` serializer) is
//! never unpickled: it is reported as not read.
//!
//! The ext types (langgraph-checkpoint `serde/jsonplus.py`): each ext's
//! data is itself msgpack, an array `[module, class name, …]`:
//! `0` constructor with one argument, `1` with positional arguments, `2`
//! with keyword arguments (`[module, name, kwargs]`), `3` a method with one
//! argument, `4` a pydantic v1 model and `5` a pydantic v2 model (`[module,
//! name, fields, method]`: LangChain's messages, `model_dump()`), `6` a
//! numpy array, `7` a `DeltaChannel`'s snapshot (its value).

use rmpv::Value;

pub const EXT_CONSTRUCTOR_KW_ARGS: i8 = 2;
pub const EXT_PYDANTIC_V1: i8 = 4;
pub const EXT_PYDANTIC_V2: i8 = 5;
pub const EXT_DELTA_SNAPSHOT: i8 = 7;

/// Why a stored value was not read.
#[derive(Debug, Clone, PartialEq)]
pub enum Unreadable {
    /// It does not decode: the reason.
    Broken(String),
    /// A serialisation chatfsck never decodes (`pickle`) or does not know.
    Unread(String),
}

/// Decode one stored value.
pub fn decode(ty: &str, bytes: &[u8]) -> Result<Value, Unreadable> {
    match ty {
        "msgpack" => msgpack(bytes),
        "json" => serde_json::from_slice::<serde_json::Value>(bytes)
            .map(|v| from_json(&v))
            .map_err(|e| Unreadable::Broken(format!("not JSON ({e})"))),
        "null" => Ok(Value::Nil),
        "bytes" | "bytearray" => Ok(Value::Binary(bytes.to_vec())),
        "pickle" => Err(Unreadable::Unread(
            "a pickled value (LangGraph's `pickle_fallback`): never unpickled".into(),
        )),
        other => Err(Unreadable::Unread(format!(
            "a value serialised as `{}`, which chatfsck does not read",
            crate::escape::escape(other)
        ))),
    }
}

/// One msgpack value that is the whole of `bytes`.
pub fn msgpack(bytes: &[u8]) -> Result<Value, Unreadable> {
    let mut rest = bytes;
    let v = rmpv::decode::read_value(&mut rest).map_err(|e| {
        Unreadable::Broken(format!(
            "not msgpack ({}, {} bytes)",
            match e {
                rmpv::decode::Error::InvalidMarkerRead(_)
                | rmpv::decode::Error::InvalidDataRead(_) => "truncated".to_string(),
                other => other.to_string(),
            },
            bytes.len()
        ))
    })?;
    if !rest.is_empty() {
        return Err(Unreadable::Broken(format!(
            "{} bytes after the msgpack value",
            rest.len()
        )));
    }
    Ok(v)
}

/// The encoded form of one value, as `ormsgpack` writes it.
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, v).expect("writing to a Vec");
    out
}

fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::F64(n.as_f64().unwrap_or_default())
            }
        }
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => Value::Map(
            o.iter()
                .map(|(k, v)| (Value::from(k.as_str()), from_json(v)))
                .collect(),
        ),
    }
}

/// A value as JSON text (tool call arguments): ext values and binaries
/// are shown by what they are, never decoded further.
pub fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Nil => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Integer(i) => i
            .as_i64()
            .map(J::from)
            .or_else(|| i.as_u64().map(J::from))
            .unwrap_or(J::Null),
        Value::F32(f) => serde_json::Number::from_f64(f64::from(*f)).map_or(J::Null, J::Number),
        Value::F64(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        Value::String(s) => J::String(s.as_str().map_or_else(
            || String::from_utf8_lossy(s.as_bytes()).into_owned(),
            str::to_string,
        )),
        Value::Binary(b) => J::String(format!("[{} bytes]", b.len())),
        Value::Array(a) => J::Array(a.iter().map(to_json).collect()),
        Value::Map(m) => J::Object(m.iter().map(|(k, v)| (key_text(k), to_json(v))).collect()),
        Value::Ext(ty, data) => match object(*ty, data) {
            Some(o) => to_json(&o.fields),
            None => J::String(format!("[ext {ty}, {} bytes]", data.len())),
        },
    }
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.as_str().map_or_else(
            || String::from_utf8_lossy(s.as_bytes()).into_owned(),
            str::to_string,
        ),
        other => other.to_string(),
    }
}

/// A map's entry by key.
pub fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Map(m) => m
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// A map's entry by key, for writing.
pub fn get_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match v {
        Value::Map(m) => m
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// A map's string entry.
pub fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, key).and_then(Value::as_str)
}

/// An object a LangGraph ext type stands for: its class and its fields
/// (keyword arguments or the model's dump).
#[derive(Debug, Clone)]
pub struct Object {
    pub module: String,
    pub class: String,
    pub fields: Value,
}

/// The object of an ext value of type `ty`, when it is one LangGraph
/// writes with keyword arguments or fields.
pub fn object(ty: i8, data: &[u8]) -> Option<Object> {
    if !matches!(
        ty,
        EXT_CONSTRUCTOR_KW_ARGS | EXT_PYDANTIC_V1 | EXT_PYDANTIC_V2
    ) {
        return None;
    }
    let Ok(Value::Array(items)) = msgpack(data) else {
        return None;
    };
    let mut items = items.into_iter();
    let module = items.next()?.as_str()?.to_string();
    let class = items.next()?.as_str()?.to_string();
    let fields = items.next()?;
    fields.is_map().then_some(Object {
        module,
        class,
        fields,
    })
}

/// An ext value of type `ty` holding `[module, class, fields, method]`,
/// as LangGraph writes a pydantic v2 model.
pub fn pydantic(module: &str, class: &str, fields: Value) -> Value {
    let data = encode(&Value::Array(vec![
        Value::from(module),
        Value::from(class),
        fields,
        Value::from("model_validate_json"),
    ]));
    Value::Ext(EXT_PYDANTIC_V2, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_value_is_broken_and_pickle_is_unread() {
        let whole = encode(&Value::Map(vec![(Value::from("a"), Value::from("bcdef"))]));
        assert!(msgpack(&whole).is_ok());
        assert!(matches!(
            msgpack(&whole[..whole.len() - 2]),
            Err(Unreadable::Broken(_))
        ));
        assert!(matches!(
            decode("pickle", b"\x80\x04"),
            Err(Unreadable::Unread(_))
        ));
    }

    #[test]
    fn a_pydantic_ext_round_trips() {
        let fields = Value::Map(vec![(Value::from("type"), Value::from("tool"))]);
        let Value::Ext(ty, data) = pydantic("m", "ToolMessage", fields.clone()) else {
            panic!()
        };
        let o = object(ty, &data).expect("an object");
        assert_eq!((o.class.as_str(), o.fields), ("ToolMessage", fields));
    }
}
