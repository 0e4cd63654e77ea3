"""Empty a test broker between tests: every topic and consumer group goes, internal ones stay.

A broker process starts in 5-8 s; emptying one takes well under a second. Tests that ask for an
empty broker (`fresh_kafka`) get the same process each time, emptied first; a test whose broker
must be a new process (killed, restarted, behind a proxy, left with an open transaction) starts
one of its own and says why.
"""

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

# How long a group may keep members after its test ended: a consumer that was not closed
# leaves when its session times out (librdkafka's default session.timeout.ms is 45 s).
GROUP_EMPTY_TIMEOUT = 60.0
TIMEOUT = 30.0
# How long a deleted topic may stay listed before it counts as re-created and is deleted again.
RELISTED_AFTER = 3.0


class NotEmptied(AssertionError):
    """The broker could not be emptied: a test left something behind it cannot remove."""


def empty_broker(bootstrap_servers: str) -> None:
    """Delete every consumer group and every topic but Kafka's own, and wait until they are gone."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    _delete_groups(admin)
    _delete_topics(admin)


def _delete_groups(admin: AdminClient) -> None:
    deadline = time.monotonic() + GROUP_EMPTY_TIMEOUT
    while True:
        listed = admin.list_consumer_groups(request_timeout=TIMEOUT).result()
        groups = [group.group_id for group in listed.valid]
        if not groups:
            return
        busy = []
        for group, future in admin.delete_consumer_groups(groups, request_timeout=TIMEOUT).items():
            try:
                future.result()
            except KafkaException as error:
                code = error.args[0].code()
                if code == KafkaError.GROUP_ID_NOT_FOUND:
                    continue
                if code != KafkaError.NON_EMPTY_GROUP:
                    raise
                busy.append(group)
        if not busy:
            return
        if time.monotonic() > deadline:
            raise NotEmptied(f"consumer groups still have members: {', '.join(sorted(busy))}")
        time.sleep(0.2)


def _delete_topics(admin: AdminClient) -> None:
    # A client of the last test may still be stopping (a deleted connector's task is stopped
    # after its DELETE answered), and its next metadata request re-creates a topic it reads:
    # brokers auto-create by default. So a topic listed again a while after its deletion is
    # deleted again, until none is listed or the deadline passes.
    deadline = time.monotonic() + TIMEOUT
    while topics := _user_topics(admin):
        if time.monotonic() > deadline:
            raise NotEmptied(f"topics still listed after their deletion: {', '.join(topics)}")
        for future in admin.delete_topics(topics, operation_timeout=TIMEOUT).values():
            try:
                future.result()
            except KafkaException as error:
                if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise
        # The controller has removed them; wait until the broker's metadata says so too, or a
        # test creating the same name at once would be told it exists.
        listed_until = min(deadline, time.monotonic() + RELISTED_AFTER)
        while _user_topics(admin) and time.monotonic() < listed_until:
            time.sleep(0.05)


def _user_topics(admin: AdminClient) -> list[str]:
    listed = admin.list_topics(timeout=TIMEOUT).topics
    return sorted(name for name in listed if not name.startswith("__"))
