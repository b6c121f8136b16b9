"""The evidence a text carries: one key's detection, the span scan and localization, the
model-assisted weighted test, the power of a test, streams and calibration."""
