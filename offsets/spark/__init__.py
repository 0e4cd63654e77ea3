"""The Spark side of the refresh: a Kafka data source that folds, the merge, the session.

Nothing here imports Django: executors run this code without the project's settings.
"""
