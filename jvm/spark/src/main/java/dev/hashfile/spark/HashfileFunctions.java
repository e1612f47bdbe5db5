package dev.hashfile.spark;

import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.udf;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;

/**
 * Hashfile's functions for Spark's DataFrame API and SQL:
 *
 * <pre>{@code
 * HashfileFunctions.register(spark);
 * spark.sql("SELECT id, hashfile_lookup('/data/prices', sku) AS price FROM orders");
 * orders.withColumn("price", HashfileFunctions.lookup("/data/prices", col("sku")));
 * }</pre>
 */
public final class HashfileFunctions {
    private HashfileFunctions() {}

    /** Registers {@code hashfile_lookup(dataset, key)} ({@link Lookup}) for SQL in {@code spark}. */
    public static void register(SparkSession spark) {
        spark.udf().register("hashfile_lookup", new Lookup(), DataTypes.StringType);
    }

    /** The value of {@code key} in {@code dataset} as JSON text, or null: {@link Lookup} as a column. */
    public static Column lookup(String dataset, Column key) {
        return udf(new Lookup(), DataTypes.StringType).apply(lit(dataset), key);
    }
}
