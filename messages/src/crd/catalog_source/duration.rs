//! Go's `time.ParseDuration`, for `spec.updateStrategy.registryPoll.interval`.
//!
//! Same grammar (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`), units and error texts as Go. Go
//! returns a signed duration; a negative one here becomes zero, which OLM's `Update()` treats
//! the same way (the poll is always due).

use std::time::Duration;

/// A duration string Go would reject; the Display text is Go's error text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {}", quote(.0))]
    Invalid(String),
    #[error("time: missing unit in duration {}", quote(.0))]
    MissingUnit(String),
    #[error("time: unknown unit {} in duration {}", quote(.unit), quote(.input))]
    UnknownUnit { unit: String, input: String },
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3600 * 1_000_000_000,
        _ => return None,
    })
}

/// Parses a Go duration string such as `10m`, `1h30m`, `45s`, `1.5h`.
pub fn parse_go_duration(input: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(input.to_owned());
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    // Go caps durations at 1<<63 ns; u128 arithmetic cannot overflow before that check.
    const MAX_NANOS: u128 = 1 << 63;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after_int) = rest.split_at(int_len);
        let (frac_part, after_num) = match after_int.strip_prefix('.') {
            Some(after_dot) => {
                let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
                after_dot.split_at(frac_len)
            }
            None => ("", after_int),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = after_num
            .bytes()
            .take_while(|b| *b != b'.' && !b.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(input.to_owned()));
        }
        let (unit, after_unit) = after_num.split_at(unit_len);
        let scale = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit.to_owned(),
            input: input.to_owned(),
        })?;
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut nanos = whole.checked_mul(scale).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            // Go keeps at most ~19 fraction digits' worth of precision; truncating is equivalent.
            let digits = &frac_part[..frac_part.len().min(18)];
            let frac: u128 = digits.parse().map_err(|_| invalid())?;
            nanos += frac * scale / 10u128.pow(digits.len() as u32);
        }
        total = total.checked_add(nanos).ok_or_else(invalid)?;
        if total > MAX_NANOS {
            return Err(invalid());
        }
        rest = after_unit;
    }
    if negative {
        return Ok(Duration::ZERO);
    }
    if total > MAX_NANOS - 1 {
        return Err(invalid());
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| invalid())?;
    let sub = u32::try_from(total % 1_000_000_000).map_err(|_| invalid())?;
    Ok(Duration::new(secs, sub))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::minutes_alone("10m", 600_000)]
    #[case::hours_and_minutes("1h30m", 5_400_000)]
    #[case::seconds_alone("45s", 45_000)]
    #[case::a_bare_zero("0", 0)]
    #[case::a_fraction_of_an_hour("1.5h", 5_400_000)]
    #[case::a_leading_dot_fraction(".5s", 500)]
    #[case::milliseconds("250ms", 250)]
    #[case::micro_sign_units("1000\u{b5}s", 1)]
    #[case::an_explicit_plus_sign("+2m", 120_000)]
    #[case::a_negative_value_saturates_to_zero("-5m", 0)]
    fn valid_go_durations_parse_to_the_same_length(#[case] input: &str, #[case] millis: u64) {
        assert_eq!(parse_go_duration(input), Ok(Duration::from_millis(millis)));
    }

    #[rstest]
    #[case::empty_string("", r#"time: invalid duration """#)]
    #[case::words("abc", r#"time: invalid duration "abc""#)]
    #[case::number_without_unit("15", r#"time: missing unit in duration "15""#)]
    #[case::unknown_unit("3d", r#"time: unknown unit "d" in duration "3d""#)]
    #[case::lone_dot(".s", r#"time: invalid duration ".s""#)]
    #[case::overflowing_hours("9999999999h", r#"time: invalid duration "9999999999h""#)]
    fn invalid_go_durations_give_go_error_text(#[case] input: &str, #[case] message: &str) {
        let err = parse_go_duration(input).expect_err("must not parse");
        assert_eq!(err.to_string(), message);
    }
}
