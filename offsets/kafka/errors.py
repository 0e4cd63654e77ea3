"""The failures every Kafka adapter raises, for the layers above to catch without knowing which."""


class KafkaUnavailable(RuntimeError):
    """The cluster could not be reached or did not answer in time."""


class TopicNotFound(LookupError):
    """A topic asked for does not exist on the cluster."""
