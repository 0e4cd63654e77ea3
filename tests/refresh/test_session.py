"""The Spark session the refresh uses: its tuning (offsets.spark.tuning) reaches the JVM."""

from offsets.tuning import DRIVER_JAVA_OPTIONS, SESSION_CONF


def test_the_driver_jvm_compiles_with_c1_only_and_keeps_a_full_size_code_cache(spark):
    """The options must be on the JVM's command line (they cannot be set once it runs)."""
    jvm = spark._jvm
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert DRIVER_JAVA_OPTIONS.split() == [
        "-XX:TieredStopAtLevel=1",
        "-XX:ReservedCodeCacheSize=240m",
    ]
    assert all(option in arguments for option in DRIVER_JAVA_OPTIONS.split())
    # What the JVM made of them: without the second, C1 alone leaves 48 MB, which a long
    # session fills.
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert hotspot.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert int(hotspot.getVMOption("ReservedCodeCacheSize").getValue()) == 240 * 2**20


def test_every_session_setting_of_the_tuning_module_is_in_force(spark):
    conf = spark.sparkContext.getConf()
    for key, value in SESSION_CONF.items():
        # Spark adds JVM options of its own (module opens) around the project's.
        if key.endswith("extraJavaOptions"):
            assert set(value.split()) <= set(conf.get(key).split()), key
        else:
            assert conf.get(key) == value, key
