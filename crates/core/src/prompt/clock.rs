//! Today's date and the local time zone, for the system prompt's runtime
//! section. Only the date is ever shown (never a clock time), so the prompt
//! changes at most once a day; the clock is injectable for tests.

use std::fmt;
use std::sync::{Arc, Mutex};

/// The local date and time zone as the system prompt shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Today {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The zone's name and UTC offset, e.g. `CET (UTC+01:00)`, or `UTC`.
    pub timezone: String,
}

impl Today {
    /// A day from its `YYYY-MM-DD` date and its time zone's description.
    pub fn new(date: impl Into<String>, timezone: impl Into<String>) -> Self {
        Today {
            date: date.into(),
            timezone: timezone.into(),
        }
    }
}

/// Where "today" comes from.
pub trait Clock: fmt::Debug + Send + Sync {
    /// The local date and time zone now. A session asks at its start and
    /// at the start of every turn, and rebuilds the system prompt when the
    /// answer changed.
    fn today(&self) -> Today;
}

/// The system's clock and local time zone (`TZ`, else `/etc/localtime`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn today(&self) -> Today {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        local_today(secs)
    }
}

/// A clock that says what it is told (tests, embedders replaying a day).
#[derive(Debug, Clone)]
pub struct FixedClock(Arc<Mutex<Today>>);

impl FixedClock {
    /// A clock that reports `today` until [`FixedClock::set`] changes it.
    pub fn new(today: Today) -> Self {
        FixedClock(Arc::new(Mutex::new(today)))
    }

    /// Change the day this clock (and every clone of it) reports.
    pub fn set(&self, today: Today) {
        if let Ok(mut t) = self.0.lock() {
            *t = today;
        }
    }
}

impl Clock for FixedClock {
    fn today(&self) -> Today {
        match self.0.lock() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// The local date and zone at `secs` after the epoch; UTC when the C
/// library cannot convert it.
#[cfg(unix)]
fn local_today(secs: u64) -> Today {
    let Ok(t) = libc::time_t::try_from(secs) else {
        return utc_today(secs);
    };
    // SAFETY: `tm` is plain data that localtime_r fills; both pointers are
    // valid for the call, and tm_zone (when set) points to a
    // NUL-terminated string the C library keeps alive.
    let (tm, zone) = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return utc_today(secs);
        }
        let zone = if tm.tm_zone.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(tm.tm_zone)
                .to_string_lossy()
                .into_owned()
        };
        (tm, zone)
    };
    // c_long is narrower than i64 on 32-bit targets.
    #[allow(clippy::useless_conversion)]
    let offset = i64::from(tm.tm_gmtoff);
    Today {
        date: format!(
            "{:04}-{:02}-{:02}",
            i64::from(tm.tm_year) + 1900,
            tm.tm_mon + 1,
            tm.tm_mday
        ),
        timezone: zone_label(&zone, offset),
    }
}

/// The local date and zone at `secs` after the epoch (a time near now:
/// the zone's offset is today's, daylight saving time included).
#[cfg(windows)]
fn local_today(secs: u64) -> Today {
    use windows_sys::Win32::System::Time as time;
    /// What GetTimeZoneInformation returns while daylight saving time is in force.
    const TIME_ZONE_ID_DAYLIGHT: u32 = 2;
    // SAFETY: TIME_ZONE_INFORMATION is plain data that the call fills.
    let (tz, which) = unsafe {
        let mut tz: time::TIME_ZONE_INFORMATION = std::mem::zeroed();
        let which = time::GetTimeZoneInformation(&mut tz);
        (tz, which)
    };
    if which == u32::MAX {
        return utc_today(secs);
    }
    let (bias, name) = if which == TIME_ZONE_ID_DAYLIGHT {
        (tz.Bias + tz.DaylightBias, &tz.DaylightName)
    } else {
        (tz.Bias + tz.StandardBias, &tz.StandardName)
    };
    let name: Vec<u16> = name.iter().copied().take_while(|&c| c != 0).collect();
    let offset = -i64::from(bias) * 60;
    let local = (secs as i64 + offset).max(0) as u64;
    Today {
        date: cogni_protocol::utc_date_time(local).0,
        timezone: zone_label(&String::from_utf16_lossy(&name), offset),
    }
}

fn utc_today(secs: u64) -> Today {
    Today::new(cogni_protocol::utc_date_time(secs).0, "UTC")
}

/// `CET (UTC+01:00)`; `UTC` for a zero offset named UTC or GMT (or not
/// named); `UTC-04:30` when the zone has no name.
pub fn zone_label(name: &str, offset_secs: i64) -> String {
    let name = name.trim();
    if offset_secs == 0 && (name.is_empty() || name == "UTC" || name == "GMT") {
        return "UTC".into();
    }
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let minutes = offset_secs.unsigned_abs() / 60;
    let offset = format!("UTC{sign}{:02}:{:02}", minutes / 60, minutes % 60);
    if name.is_empty() || name.starts_with(['+', '-']) {
        offset
    } else {
        format!("{name} ({offset})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_labels_name_the_zone_and_its_offset() {
        assert_eq!(zone_label("CET", 3600), "CET (UTC+01:00)");
        assert_eq!(zone_label("NDT", -9000), "NDT (UTC-02:30)");
        assert_eq!(zone_label("UTC", 0), "UTC");
        assert_eq!(zone_label("GMT", 0), "UTC");
        assert_eq!(zone_label("", 0), "UTC");
        assert_eq!(zone_label("", 19_800), "UTC+05:30");
        // Zones without an abbreviation report their offset as the name.
        assert_eq!(zone_label("-03", -10_800), "UTC-03:00");
        assert_eq!(zone_label("BST", 0), "BST (UTC+00:00)");
    }

    #[test]
    fn the_system_clock_gives_a_date_and_a_zone() {
        let today = SystemClock.today();
        let d = today.date.as_bytes();
        assert_eq!(d.len(), 10, "{today:?}");
        assert!(
            d.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }),
            "{today:?}"
        );
        assert!(!today.timezone.is_empty());
        // Within a day of the UTC date.
        assert_eq!(local_today(0).date.len(), 10);
        assert!(["1969-12-31", "1970-01-01"].contains(&local_today(0).date.as_str()));
    }

    #[test]
    fn a_fixed_clock_changes_for_every_clone() {
        let clock = FixedClock::new(Today::new("2025-01-01", "UTC"));
        let other = clock.clone();
        clock.set(Today::new("2025-01-02", "UTC"));
        assert_eq!(other.today().date, "2025-01-02");
    }
}
