//! Plain scalars resolved with the YAML 1.2 core schema: null, booleans, numbers (decimal, `0o`, `0x`,
//! infinities, NaN), else strings.

use super::tree::{SmolStr, Value};

/// Resolves a plain scalar with the YAML 1.2 core schema.
pub(super) fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Value::Number(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Value::Number(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Number(f64::NAN),
        _ => {}
    }
    if let Some(octal) = text.strip_prefix("0o")
        && !octal.is_empty()
        && octal.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return Value::Number(digits_value(octal, 8));
    }
    if let Some(hex) = text.strip_prefix("0x")
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Value::Number(digits_value(hex, 16));
    }
    if is_core_number(text)
        && let Ok(number) = text.parse::<f64>()
    {
        return Value::Number(number);
    }
    Value::String(SmolStr::new(text))
}

fn digits_value(digits: &str, radix: u32) -> f64 {
    digits.chars().filter_map(|ch| ch.to_digit(radix)).fold(0.0, |acc, digit| acc * f64::from(radix) + f64::from(digit))
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_core_number(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    if matches!(bytes.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let int_start = i;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - frac_start;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < bytes.len() && matches!(bytes[i], b'e' | b'E') {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == bytes.len()
}
