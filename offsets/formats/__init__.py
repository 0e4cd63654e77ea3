"""Byte-exact models of what the Java Kafka Connect runtime writes to and reads from its topics.

Pure functions and frozen dataclasses only: no I/O, no Django. Import from the submodules
(``offsets.formats.jackson``, ``offsets.formats.offset_records`` ...); nothing is re-exported here.
"""
