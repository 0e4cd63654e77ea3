package dev.offsetsdashboard.connectors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** Emits the rows of every table in turn, resuming after the committed "incrementing" id. */
public class TableSourceTask extends SourceTask {
    private String topic;
    private long maxRows;
    private long pollIntervalMs;
    private final Map<String, Long> lastId = new LinkedHashMap<>();

    static Map<String, String> partition(String table) {
        Map<String, String> partition = new HashMap<>();
        partition.put("protocol", "1");
        partition.put("table", table);
        return partition;
    }

    @Override
    public String version() {
        return "1.0.0";
    }

    @Override
    public void start(Map<String, String> props) {
        AbstractConfig config = new AbstractConfig(TableSourceConnector.CONFIG, props);
        topic = config.getString(TableSourceConnector.TOPIC);
        maxRows = config.getLong(TableSourceConnector.MAX_ROWS);
        pollIntervalMs = config.getLong(TableSourceConnector.POLL_INTERVAL_MS);
        List<Map<String, String>> partitions = new ArrayList<>();
        for (String table : config.getList(TableSourceConnector.TABLES)) {
            partitions.add(partition(table));
        }
        Map<Map<String, String>, Map<String, Object>> committed =
            context.offsetStorageReader().offsets(partitions);
        for (Map<String, String> partition : partitions) {
            Map<String, Object> offset = committed.get(partition);
            Object id = offset == null ? null : offset.get("incrementing");
            lastId.put(partition.get("table"), id == null ? 0L : ((Number) id).longValue());
        }
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        Thread.sleep(pollIntervalMs);
        List<SourceRecord> records = new ArrayList<>();
        for (Map.Entry<String, Long> entry : lastId.entrySet()) {
            long id = entry.getValue() + 1;
            if (id > maxRows) {
                continue;
            }
            entry.setValue(id);
            Map<String, Object> offset = new HashMap<>();
            offset.put("incrementing", id);
            offset.put("timestamp", System.currentTimeMillis());
            records.add(new SourceRecord(partition(entry.getKey()), offset, topic, null,
                Schema.STRING_SCHEMA, entry.getKey() + ":" + id));
        }
        return records.isEmpty() ? null : records;
    }

    @Override
    public void stop() {
    }
}
