package dev.hashfile.spark;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * {@link HashfileFunctions#lookup(org.apache.spark.sql.Dataset, String,
 * String, String)}'s work in one partition: its rows in batches, each
 * batch's keys looked up together ({@code Reader.getManyJson}: one batch
 * per store, which for a remote dataset is its requests together), each
 * row given the value's JSON text (null if absent) as a last column. The
 * dataset is the one {@link Lookup} opened in this JVM.
 */
final class BatchLookup implements MapPartitionsFunction<Row, Row> {
    private static final long serialVersionUID = 1L;

    /** Rows looked up together. */
    static final int BATCH = 1024;

    private final String dataset;
    private final int keyField;

    BatchLookup(String dataset, int keyField) {
        this.dataset = dataset;
        this.keyField = keyField;
    }

    @Override
    public Iterator<Row> call(Iterator<Row> rows) {
        return new Iterator<>() {
            private final List<Row> batch = new ArrayList<>(BATCH);
            private String[] found = new String[0];
            private int at;

            @Override
            public boolean hasNext() {
                if (at < batch.size()) {
                    return true;
                }
                batch.clear();
                at = 0;
                while (batch.size() < BATCH && rows.hasNext()) {
                    batch.add(rows.next());
                }
                if (batch.isEmpty()) {
                    return false;
                }
                List<Object> keys = new ArrayList<>(batch.size());
                List<Integer> asked = new ArrayList<>(batch.size());
                for (int i = 0; i < batch.size(); i++) {
                    Object key = batch.get(i).get(keyField);
                    if (key != null) {
                        keys.add(Lookup.key(key));
                        asked.add(i);
                    }
                }
                String[] values = Lookup.reader(dataset).getManyJson(keys);
                found = new String[batch.size()];
                for (int i = 0; i < values.length; i++) {
                    found[asked.get(i)] = values[i];
                }
                return true;
            }

            @Override
            public Row next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                Row row = batch.get(at);
                Object[] values = new Object[row.length() + 1];
                for (int i = 0; i < row.length(); i++) {
                    values[i] = row.get(i);
                }
                values[row.length()] = found[at++];
                return RowFactory.create(values);
            }
        };
    }
}
