//! When and how long to wait before retrying a model request.

use std::time::Duration;

use reqwest::header::HeaderMap;

/// Statuses worth retrying: rate limits and server-side failures.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// Exponential backoff with jitter: `base * 2^attempt`, drawn from its upper half so that
/// concurrent clients spread out, capped at `max`.
pub fn backoff(base: Duration, attempt: u32, max: Duration) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.min(16));
    let full = exp.min(max);
    let half = full / 2;
    half + full.mul_f64(fastrand::f64() * 0.5)
}

/// The server's `Retry-After` in seconds (HTTP dates are rare from these APIs and ignored),
/// bounded so that a hostile or buggy value cannot park the run for hours.
pub fn retry_after(headers: &HeaderMap, max: Duration) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = v.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(secs.min(max.as_secs_f64())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(2);
        for attempt in 0..10 {
            let d = backoff(base, attempt, max);
            let full = (base * 2u32.pow(attempt)).min(max);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
    }

    #[test]
    fn retry_after_seconds_bounded() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "3".parse().expect("header"));
        assert_eq!(
            retry_after(&h, Duration::from_secs(60)),
            Some(Duration::from_secs(3))
        );
        h.insert("retry-after", "9999".parse().expect("header"));
        assert_eq!(
            retry_after(&h, Duration::from_secs(60)),
            Some(Duration::from_secs(60))
        );
        h.insert("retry-after", "soon".parse().expect("header"));
        assert_eq!(retry_after(&h, Duration::from_secs(60)), None);
    }
}
