package dev.hashfile.spark;

import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.udf;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * Hashfile's functions for Spark's DataFrame API and SQL:
 *
 * <pre>{@code
 * HashfileFunctions.register(spark);
 * spark.sql("SELECT id, hashfile_lookup('/data/prices', sku) AS price FROM orders");
 * orders.withColumn("price", HashfileFunctions.lookup("/data/prices", col("sku")));
 * HashfileFunctions.lookup(orders, "/data/prices", "sku", "price");   // in batches
 * }</pre>
 */
public final class HashfileFunctions {
    private HashfileFunctions() {}

    /** Registers {@code hashfile_lookup(dataset, key)} ({@link Lookup}) for SQL in {@code spark}. */
    public static void register(SparkSession spark) {
        spark.udf().register("hashfile_lookup", new Lookup(), DataTypes.StringType);
    }

    /**
     * {@code df} with a column {@code as}: the value of its column {@code
     * key} in {@code dataset} as JSON text, or null, looked up in batches of
     * {@value BatchLookup#BATCH} rows (one batch per store: for a remote
     * dataset, a batch's requests together). The DataFrame form of a lookup
     * join; {@link #lookup(String, Column)} is the per-row column form.
     */
    public static Dataset<Row> lookup(Dataset<Row> df, String dataset, String key, String as) {
        int keyField = df.schema().fieldIndex(key);
        Lookup.key(sample(df.schema().fields()[keyField].dataType()));
        StructType schema = df.schema().add(as, DataTypes.StringType, true);
        return df.mapPartitions(new BatchLookup(dataset, keyField), Encoders.row(schema));
    }

    /** A value of {@code type}, to judge a key column by before any task runs. */
    private static Object sample(DataType type) {
        if (type instanceof StringType) {
            return "";
        }
        if (type instanceof BinaryType) {
            return new byte[0];
        }
        if (type instanceof LongType || type instanceof IntegerType || type instanceof ShortType
                || type instanceof ByteType) {
            return 0L;
        }
        throw new IllegalArgumentException("hashfile's lookup key is a string, an integer or binary column, not "
                + type.simpleString() + " (cast it)");
    }

    /** The value of {@code key} in {@code dataset} as JSON text, or null: {@link Lookup} as a column. */
    public static Column lookup(String dataset, Column key) {
        return udf(new Lookup(), DataTypes.StringType).apply(lit(dataset), key);
    }
}
