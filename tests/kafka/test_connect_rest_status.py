"""What the Connect REST client keeps of GET /connectors/{name}/status."""

from offsets.kafka.connect_rest import ConnectorStatus


def test_traces_are_masked_and_a_failed_task_makes_the_connector_failed():
    status = ConnectorStatus.from_json(
        {
            "name": "jdbc",
            "connector": {"state": "RUNNING", "worker_id": "w:8083"},
            "tasks": [
                {"id": 1, "state": "RUNNING", "worker_id": "w:8083"},
                {
                    "id": 0,
                    "state": "FAILED",
                    "worker_id": "w:8083",
                    "trace": "SQLException: jdbc:postgresql://app:hunter2@db/shop refused",
                },
            ],
        }
    )
    assert status.tasks == ("FAILED", "RUNNING")
    assert status.summary == "FAILED"
    assert status.traces == ("SQLException: jdbc:postgresql://app:********@db/shop refused",)
