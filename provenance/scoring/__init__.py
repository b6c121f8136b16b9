"""The scoring service: registered keys in, the detector's decision out
(``provenance.scoring.service``). It sits at the foundation of the apps and imports none of
them; every surface that scores a text calls it and stores what it returns."""
