"""The Spark side of the refresh: a Kafka data source, pure DataFrame transforms, the session.

Nothing here imports Django: executors run this code without the project's settings.
"""
