"""Kafka client settings read from files (`${file:/path}`), never from the database."""

import pytest

from offsets.kafka.errors import KafkaUnavailable
from offsets.kafka.secret_files import resolved


def test_a_whole_value_reference_is_the_files_text_without_its_line_break(tmp_path):
    secret = tmp_path / "kafka-password"
    secret.write_text("s3cr3t-from-file\n")

    settings = resolved({"sasl.password": f"${{file:{secret}}}", "sasl.username": "dash"})

    assert settings == {"sasl.password": "s3cr3t-from-file", "sasl.username": "dash"}


def test_a_value_that_only_contains_a_reference_is_kept_as_typed(tmp_path):
    settings = {"sasl.password": "x${file:/etc/hostname}", "retries": 3, "other": "${env:X}"}

    assert resolved(settings) == settings


def test_a_file_that_cannot_be_read_names_the_setting_and_path_not_any_content(tmp_path):
    missing = tmp_path / "gone"

    with pytest.raises(KafkaUnavailable) as failed:
        resolved({"ssl.key.password": f"${{file:{missing}}}"})

    assert str(failed.value) == (
        f"The client setting ssl.key.password is read from {missing}, which cannot be read: "
        "No such file or directory."
    )
