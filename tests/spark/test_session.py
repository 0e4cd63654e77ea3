"""The Spark session the refresh uses: its settings reach the JVM."""

from offsets.spark.session import DRIVER_JAVA_OPTIONS


def test_the_driver_jvm_compiles_with_c1_only(spark):
    """The option must be on the JVM's command line (it cannot be set once the JVM runs)."""
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert DRIVER_JAVA_OPTIONS == "-XX:TieredStopAtLevel=1"
    assert DRIVER_JAVA_OPTIONS in list(runtime.getInputArguments())
