"""Use of the detector: the detection log (who checked what) and the daily quota."""
