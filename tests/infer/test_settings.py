"""Checks of a model provider's settings table."""

import pytest

from lackpy_kernel.infer.models import check_settings


def test_check_settings_names_unknown_keys_and_a_wrong_plugin():
    check_settings("ollama", "local", {"plugin": "ollama", "model": "m"}, {"plugin", "model"})
    with pytest.raises(ValueError, match=r"'modle'.*'local'.*known settings: model, plugin"):
        check_settings("ollama", "local", {"modle": "m"}, {"plugin", "model"})
    with pytest.raises(ValueError, match="expected 'ollama'"):
        check_settings("ollama", "local", {"plugin": "anthropic"}, {"plugin"})
    with pytest.raises(ValueError, match="table"):
        check_settings("ollama", "local", ["model"], {"plugin"})
