package dev.hashfile.spark;

import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The data source {@code "hashfile"}:
 *
 * <pre>{@code
 * df.write().format("hashfile").option("key", "sku").option("shards", 8).save(path);
 * spark.read().format("hashfile").load(path);   // key, value (JSON text)
 * }</pre>
 *
 * Reads are Spark's data source API (one partition per shard: {@link
 * HashfileTable}). Writes take the whole DataFrame ({@link
 * CreatableRelationProvider}): the rows are routed to their shards by a
 * shuffle Spark plans, which the newer write API cannot ask for without a
 * catalog ({@link WriteJob}). docs/JVM.md, "Spark".
 */
public final class HashfileSource implements TableProvider, DataSourceRegister, CreatableRelationProvider {
    @Override
    public String shortName() {
        return "hashfile";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return ReadOptions.of(options).defaultSchema();
    }

    /** A schema given to the reader is taken (each field read from the value by name). */
    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new HashfileTable(schema, properties);
    }

    @Override
    public BaseRelation createRelation(SQLContext context, SaveMode mode,
            scala.collection.immutable.Map<String, String> parameters, Dataset<Row> data) {
        WriteJob.run(data, mode, new CaseInsensitiveStringMap(scala.jdk.javaapi.CollectionConverters.asJava(parameters)));
        StructType schema = data.schema();
        return new BaseRelation() {
            @Override
            public SQLContext sqlContext() {
                return context;
            }

            @Override
            public StructType schema() {
                return schema;
            }
        };
    }
}
