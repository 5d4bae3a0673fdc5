//! A cron's schedule: its expression read as LangGraph's server reads it (through Python's
//! croniter), in a time zone, and the times it fires.
//!
//! croniter takes five fields (minute, hour, day of month, month, day of week), a sixth for
//! **seconds, last**, and a seventh for the year after that; croner, which does the matching
//! here, wants seconds first. The fields are put in croner's order before it parses them, so
//! `* * * * * */2` fires every two seconds, as it does on LangGraph's server.

use crate::error::ApiError;
use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// croniter's aliases, as five-field expressions.
const ALIASES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// What a schedule accepts, said in every refusal.
const FORMAT: &str = "five fields (minute hour day-of-month month day-of-week, e.g. '*/5 * * * *' \
     for every five minutes), a sixth for seconds and a seventh for the year after them \
     (e.g. '* * * * * */10' for every ten seconds), or @hourly, @daily, @weekly, @monthly, @yearly";

/// A parsed schedule in its time zone (UTC when none is given).
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    cron: Cron,
    zone: Tz,
}

impl Schedule {
    /// Reads `expression` in `timezone` (an IANA name such as `America/New_York`).
    pub(crate) fn parse(expression: &str, timezone: Option<&str>) -> Result<Self, ApiError> {
        let zone = zone(timezone)?;
        let reordered = croner_order(expression)?;
        let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Optional).build();
        let cron = parser.parse(&reordered).map_err(|error| {
            ApiError::Invalid(format!("Invalid cron schedule: {expression:?}: {error}. A schedule has {FORMAT}"))
        })?;
        Ok(Self { cron, zone })
    }

    /// Reads `expression` in `timezone`, and refuses a schedule that never fires after `now_ms`
    /// (`0 0 30 2 *`, or a year gone by).
    pub(crate) fn parse_firing(expression: &str, timezone: Option<&str>, now_ms: i64) -> Result<(Self, i64), ApiError> {
        let schedule = Self::parse(expression, timezone)?;
        let next = schedule.next_after(now_ms).ok_or_else(|| {
            ApiError::Invalid(format!("The cron schedule {expression:?} never fires: no time after now matches it"))
        })?;
        Ok((schedule, next))
    }

    /// The first time the schedule fires strictly after `ms` (milliseconds since the Unix
    /// epoch), in milliseconds; `None` if it never fires again.
    pub(crate) fn next_after(&self, ms: i64) -> Option<i64> {
        let from = self.zone.from_utc_datetime(&DateTime::<Utc>::from_timestamp_millis(ms)?.naive_utc());
        let next = self.cron.find_next_occurrence(&from, false).ok()?;
        Some(next.timestamp_millis())
    }
}

/// The time zone named `timezone`; UTC when none is named.
fn zone(timezone: Option<&str>) -> Result<Tz, ApiError> {
    match timezone {
        None => Ok(Tz::UTC),
        Some(name) => name.parse::<Tz>().map_err(|_| {
            ApiError::Invalid(format!(
                "Invalid timezone: {name:?}. Use an IANA time zone name (e.g. 'America/New_York', 'Europe/Paris', 'UTC')"
            ))
        }),
    }
}

/// The expression with its fields in croner's order: seconds first, then minute to day of
/// week, then the year.
fn croner_order(expression: &str) -> Result<String, ApiError> {
    let trimmed = expression.trim();
    let expanded =
        ALIASES.iter().find(|(alias, _)| alias.eq_ignore_ascii_case(trimmed)).map_or(trimmed, |(_, fields)| fields);
    let fields: Vec<&str> = expanded.split_whitespace().collect();
    let ordered = match fields.as_slice() {
        [_, _, _, _, _] => fields,
        [rest @ .., seconds] if fields.len() == 6 => std::iter::once(*seconds).chain(rest.iter().copied()).collect(),
        [rest @ .., seconds, year] if fields.len() == 7 => {
            std::iter::once(*seconds).chain(rest.iter().copied()).chain(std::iter::once(*year)).collect()
        }
        _ => {
            return Err(ApiError::Invalid(format!(
                "Invalid cron schedule: {expression:?} has {} fields. A schedule has {FORMAT}",
                fields.len()
            )));
        }
    };
    Ok(ordered.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Milliseconds of a UTC time.
    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single().map(|t| t.timestamp_millis()).unwrap_or_default()
    }

    fn next(expression: &str, zone: Option<&str>, from: i64) -> Option<i64> {
        Schedule::parse(expression, zone).map_or_else(|e| panic!("{e}"), |s| s.next_after(from))
    }

    #[test]
    fn five_fields_fire_on_the_minute() {
        let from = at(2025, 1, 1, 0, 0, 0);
        assert_eq!(next("* * * * *", None, from), Some(at(2025, 1, 1, 0, 1, 0)));
        assert_eq!(next("*/15 9-17 * * 1-5", None, from + 1), Some(at(2025, 1, 1, 9, 0, 0)));
    }

    #[test]
    fn a_sixth_field_is_the_seconds_as_croniter_reads_it() {
        let from = at(2025, 1, 1, 0, 0, 0);
        assert_eq!(next("* * * * * *", None, from), Some(at(2025, 1, 1, 0, 0, 1)));
        assert_eq!(next("* * * * * */2", None, from), Some(at(2025, 1, 1, 0, 0, 2)));
        assert_eq!(next("* * * * * 15", None, from), Some(at(2025, 1, 1, 0, 0, 15)));
        assert_eq!(next("0 0 * * * * 2030", None, from), Some(at(2030, 1, 1, 0, 0, 0)));
        // Half a second after a firing, the next is the next whole second.
        assert_eq!(next("* * * * * *", None, from + 500), Some(at(2025, 1, 1, 0, 0, 1)));
    }

    #[test]
    fn day_of_month_or_day_of_week_as_vixie_cron() {
        // 1 January 2025 is a Wednesday; either condition fires (croniter gives the same).
        let from = at(2025, 1, 1, 0, 0, 0);
        assert_eq!(next("0 12 1 * MON", None, from), Some(at(2025, 1, 1, 12, 0, 0)));
        assert_eq!(next("0 12 1 * MON", None, at(2025, 1, 1, 12, 0, 0)), Some(at(2025, 1, 6, 12, 0, 0)));
        assert_eq!(next("0 0 L * *", None, from), Some(at(2025, 1, 31, 0, 0, 0)));
        assert_eq!(next("0 0 * * 5#2", None, from), Some(at(2025, 1, 10, 0, 0, 0)));
        assert_eq!(next("@hourly", None, from), Some(at(2025, 1, 1, 1, 0, 0)));
        assert_eq!(next("@midnight", None, from), Some(at(2025, 1, 2, 0, 0, 0)));
    }

    #[test]
    fn a_time_zone_moves_the_firing_and_follows_daylight_saving() {
        // 9:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer.
        let winter = at(2025, 1, 1, 0, 0, 0);
        assert_eq!(next("0 9 * * *", Some("America/New_York"), winter), Some(at(2025, 1, 1, 14, 0, 0)));
        let summer = at(2025, 7, 1, 0, 0, 0);
        assert_eq!(next("0 9 * * *", Some("America/New_York"), summer), Some(at(2025, 7, 1, 13, 0, 0)));
        assert_eq!(next("0 9 * * *", Some("UTC"), summer), Some(at(2025, 7, 1, 9, 0, 0)));
    }

    #[test]
    fn bad_schedules_and_zones_are_refused_with_the_reason() {
        for bad in ["", "* * * *", "61 * * * *", "a b c d e", "* * * * * * * *", "@every 5s"] {
            let error = Schedule::parse(bad, None).expect_err(bad).to_string();
            assert!(error.contains("Invalid cron schedule") && error.contains("five fields"), "{bad:?}: {error}");
        }
        let error = Schedule::parse("* * * * *", Some("Mars/Olympus")).expect_err("zone").to_string();
        assert!(error.contains("Invalid timezone: \"Mars/Olympus\""), "{error}");
        let error =
            Schedule::parse_firing("0 0 30 2 *", None, at(2025, 1, 1, 0, 0, 0)).expect_err("Feb 30").to_string();
        assert!(error.contains("never fires"), "{error}");
        let error =
            Schedule::parse_firing("0 0 1 1 * 0 2020", None, at(2025, 1, 1, 0, 0, 0)).expect_err("past").to_string();
        assert!(error.contains("never fires"), "{error}");
    }
}
