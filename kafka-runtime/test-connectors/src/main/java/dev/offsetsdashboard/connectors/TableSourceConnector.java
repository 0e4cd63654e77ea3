package dev.offsetsdashboard.connectors;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A JDBC-like source: one source partition per table, {"protocol": "1", "table": name}, and
 * offsets of several fields, {"incrementing": id, "timestamp": ms}, like the JDBC connector's
 * timestamp+incrementing mode. Each table yields rows 1, 2, 3... up to max.rows.
 */
public class TableSourceConnector extends SourceConnector {
    static final String TOPIC = "topic";
    static final String TABLES = "tables";
    static final String MAX_ROWS = "max.rows";
    static final String POLL_INTERVAL_MS = "poll.interval.ms";
    static final ConfigDef CONFIG = new ConfigDef()
        .define(TOPIC, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "The topic rows are written to.")
        .define(TABLES, ConfigDef.Type.LIST, ConfigDef.Importance.HIGH, "The tables: one source partition each.")
        .define(MAX_ROWS, ConfigDef.Type.LONG, Long.MAX_VALUE, ConfigDef.Importance.LOW,
            "How many rows each table has; the task idles after the last one.")
        .define(POLL_INTERVAL_MS, ConfigDef.Type.LONG, 200L, ConfigDef.Importance.LOW,
            "The pause between two polls.");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return TableSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        configs.add(props);
        return configs;
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> connectorConfig) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1.0.0";
    }
}
