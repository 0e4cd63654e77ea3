"""One connector's page: its facts, charts and partitions, and the controls it offers."""
