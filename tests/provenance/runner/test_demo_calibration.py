"""``make run`` measures the demo key's false-positive rates at its first start, in the
background, so the first check's page states a measured rate; a later start leaves a
measured key alone."""

from __future__ import annotations

import pytest

from provenance.keys.models import KeyCalibration
from provenance.runner import embedded


@pytest.mark.django_db(transaction=True)
def test_the_first_start_calibrates_the_demo_key_and_a_later_one_does_not(
    tmp_path, settings, tokenizer_row
):
    settings.PROVENANCE_CALIBRATION_TEXTS = 4  # the default's 300 take about 7 CPU seconds
    settings.PROVENANCE_MODEL_ASSIST = "adaptive"  # on, as make run has it: still no model
    embedded._demo_data(tmp_path)
    assert not KeyCalibration.objects.exists()  # "not measured yet"
    thread = embedded._calibrate_demo_key()
    assert thread is not None and thread.daemon
    thread.join(timeout=120)
    (run,) = KeyCalibration.objects.all()
    assert run.status == KeyCalibration.Status.DONE and run.key.name == embedded.DEMO_KEY
    assert run.power_prompts == 0 and run.rates.count() >= 3
    assert run.assisted.get("note", "").startswith("not requested")
    assert embedded._calibrate_demo_key() is None  # measured: nothing to do
