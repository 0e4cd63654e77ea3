"""With LOG_FORMAT=json the Spark driver JVM logs through the project's JSON log4j profile."""

from offsets.spark.session import JSON_LOG4J, driver_java_options


def test_json_logs_add_the_json_profile_to_the_drivers_own_options():
    options = driver_java_options("-XX:TieredStopAtLevel=1", "json")
    assert options == f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={JSON_LOG4J}"
    assert driver_java_options("", "json") == f"-Dlog4j2.configurationFile={JSON_LOG4J}"
    assert JSON_LOG4J.is_file()


def test_plain_logs_keep_sparks_own_profile():
    assert driver_java_options("-XX:TieredStopAtLevel=1", "plain") == "-XX:TieredStopAtLevel=1"
