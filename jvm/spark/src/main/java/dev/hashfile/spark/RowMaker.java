package dev.hashfile.spark;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * An entry as a row of the scan's schema. The schema {@code key STRING,
 * value STRING} (the default, without one given) holds the key and the
 * value's JSON text. Any other schema is read from the decoded value: the
 * key field (the option {@code key}, default {@code "key"}) holds the key;
 * with the option {@code value}, that field holds the whole value; without
 * it, every other field is the value's entry of that name (the value a map,
 * as {@code write} stores a row; an absent entry is null). A value that is
 * not of its field's type is an error naming the key and the field, never
 * a null or a cast.
 */
final class RowMaker {
    private final StructType schema;
    private final int keyField;
    private final int valueField;
    private final boolean json;

    RowMaker(StructType schema, ReadOptions options) {
        this.schema = schema;
        this.keyField = check(schema, options);
        this.valueField = options.value() == null ? -1 : schema.fieldIndex(options.value());
        // The default layout (key, value STRING), given or inferred, whatever
        // type the key is read as: the value is its JSON text.
        this.json = options.value() == null && schema.size() == 2 && schema.fields()[1 - keyField].name().equals("value")
                && schema.fields()[1 - keyField].dataType() instanceof StringType;
    }

    /** The key field's index; an error for a schema this source cannot fill. */
    static int check(StructType schema, ReadOptions options) {
        List<String> names = List.of(schema.fieldNames());
        int key = names.indexOf(options.key());
        if (key < 0) {
            throw new IllegalArgumentException("the schema has no key field \"" + options.key() + "\" (its fields: "
                    + String.join(", ", names) + "); name it with .option(\"key\", field)");
        }
        DataType keyType = schema.fields()[key].dataType();
        if (!(keyType instanceof StringType || keyType instanceof BinaryType || keyType instanceof LongType)) {
            throw new IllegalArgumentException("the key field \"" + options.key() + "\" is "
                    + keyType.simpleString() + "; a key reads as string, binary or bigint");
        }
        if (options.value() != null && !names.contains(options.value())) {
            throw new IllegalArgumentException("the schema has no value field \"" + options.value() + "\" (its fields: "
                    + String.join(", ", names) + ")");
        }
        for (StructField field : schema.fields()) {
            supported(field.dataType(), field.name());
        }
        return key;
    }

    private static void supported(DataType type, String where) {
        if (type instanceof ArrayType a) {
            supported(a.elementType(), where + "[]");
        } else if (type instanceof MapType m) {
            if (!(m.keyType() instanceof StringType)) {
                throw new IllegalArgumentException("field " + where + " is " + type.simpleString()
                        + "; a map read from a value has string keys");
            }
            supported(m.valueType(), where + "{}");
        } else if (type instanceof StructType s) {
            for (StructField f : s.fields()) {
                supported(f.dataType(), where + "." + f.name());
            }
        } else if (!(type instanceof StringType || type instanceof BinaryType || type instanceof LongType
                || type instanceof IntegerType || type instanceof ShortType || type instanceof ByteType
                || type instanceof DoubleType || type instanceof FloatType || type instanceof BooleanType
                || type instanceof DecimalType)) {
            throw new IllegalArgumentException("field " + where + " is " + type.simpleString() + ", which a hashfile "
                    + "value does not hold (it reads as string, binary, integers, double, float, boolean, decimal, "
                    + "array, map and struct; read it as a string and convert it in Spark)");
        }
    }

    /** Whether rows take the value as JSON text (the default schema). */
    boolean json() {
        return json;
    }

    InternalRow row(Object key, Object value) {
        Object[] values = new Object[schema.size()];
        StructField[] fields = schema.fields();
        values[keyField] = keyValue(key, fields[keyField].dataType());
        if (json) {
            values[1 - keyField] = UTF8String.fromString((String) value);
        } else if (valueField >= 0) {
            values[valueField] = convert(value, fields[valueField].dataType(), key, fields[valueField].name());
        } else {
            if (value != null && !(value instanceof Map<?, ?>)) {
                throw wrong(key, "the value", value, "a map whose entries are the schema's fields");
            }
            Map<?, ?> map = (Map<?, ?>) value;
            for (int i = 0; i < fields.length; i++) {
                if (i != keyField) {
                    values[i] = convert(map == null ? null : map.get(fields[i].name()), fields[i].dataType(), key,
                            fields[i].name());
                }
            }
        }
        return new GenericInternalRow(values);
    }

    private static Object keyValue(Object key, DataType type) {
        byte[] bytes = key instanceof byte[] b ? b : ((String) key).getBytes(StandardCharsets.UTF_8);
        if (type instanceof BinaryType) {
            return bytes;
        }
        String text = key instanceof String s ? s : null;
        if (text == null) {
            throw new IllegalArgumentException("a key stored as bytes does not read as " + type.simpleString()
                    + "; read the key field as binary");
        }
        if (type instanceof LongType) {
            // Only an integer's own digits, as the writer keys integers:
            // "007", "+5" or other scripts' digits are other keys.
            Long n = canonical(text);
            if (n == null) {
                throw new IllegalArgumentException("key \"" + text + "\" is not an integer's digits as written "
                        + "(-?[1-9][0-9]* or 0); read the key field as string");
            }
            return n;
        }
        return UTF8String.fromString(text);
    }

    private static Long canonical(String text) {
        if (!text.matches("-?(0|[1-9][0-9]{0,18})")) {
            return null;
        }
        try {
            long n = Long.parseLong(text);
            return Long.toString(n).equals(text) ? n : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** {@code value} as Spark holds a value of {@code type}; {@code where} names the field for errors. */
    private static Object convert(Object value, DataType type, Object key, String where) {
        if (value == null) {
            return null;
        }
        if (type instanceof StringType && value instanceof String s) {
            return UTF8String.fromString(s);
        }
        // A Spark binary column is stored as its base64 text (to_json's
        // form): read as binary, that text would be other bytes. Only a
        // stored binary string reads as binary.
        if (type instanceof BinaryType && value instanceof byte[] b) {
            return b;
        }
        // Spark's to_json writes a float that is not finite as text.
        if (value instanceof String s && (type instanceof DoubleType || type instanceof FloatType)) {
            Double special = switch (s) {
                case "NaN" -> Double.NaN;
                case "Infinity" -> Double.POSITIVE_INFINITY;
                case "-Infinity" -> Double.NEGATIVE_INFINITY;
                default -> null;
            };
            if (special != null) {
                return type instanceof DoubleType ? (Object) special : (Object) special.floatValue();
            }
        }
        if (type instanceof BooleanType && value instanceof Boolean b) {
            return b;
        }
        if (value instanceof Long n) {
            if (type instanceof LongType) {
                return n;
            }
            if (type instanceof IntegerType && n == n.intValue()) {
                return n.intValue();
            }
            if (type instanceof ShortType && n == n.shortValue()) {
                return n.shortValue();
            }
            if (type instanceof ByteType && n == n.byteValue()) {
                return n.byteValue();
            }
            // Only where the double is the integer itself (not past 2^53).
            if (type instanceof DoubleType && (long) n.doubleValue() == n && Math.abs(n) <= (1L << 53)) {
                return n.doubleValue();
            }
        }
        if (value instanceof Double d) {
            if (type instanceof DoubleType) {
                return d;
            }
            // A float column is written as the float's shortest text (0.1),
            // which reads as the double nearest it: a float if the float's
            // own text reads as that same double.
            if (type instanceof FloatType && (d.isNaN() || d.isInfinite()
                    || Double.parseDouble(Float.toString(d.floatValue())) == d)) {
                return d.floatValue();
            }
        }
        if (type instanceof DecimalType dt) {
            BigDecimal exact = value instanceof String s ? parse(s, dt)
                    : value instanceof Long n ? BigDecimal.valueOf(n)
                    : value instanceof BigInteger i ? new BigDecimal(i) : null;
            if (exact != null) {
                Decimal decimal = Decimal.apply(exact);
                if (decimal.changePrecision(dt.precision(), dt.scale())
                        && decimal.toJavaBigDecimal().compareTo(exact) == 0) {
                    return decimal;
                }
                throw wrong(key, where, value, type.simpleString() + " without rounding");
            }
        }
        if (type instanceof ArrayType a && value instanceof List<?> list) {
            Object[] items = new Object[list.size()];
            for (int i = 0; i < items.length; i++) {
                items[i] = convert(list.get(i), a.elementType(), key, where + "[" + i + "]");
            }
            return new GenericArrayData(items);
        }
        if (type instanceof MapType m && value instanceof Map<?, ?> map) {
            Object[] keys = new Object[map.size()];
            Object[] values = new Object[map.size()];
            int i = 0;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!(e.getKey() instanceof String k)) {
                    throw wrong(key, where, value, type.simpleString() + " (its keys strings)");
                }
                keys[i] = UTF8String.fromString(k);
                values[i] = convert(e.getValue(), m.valueType(), key, where + "." + k);
                i++;
            }
            return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
        }
        if (type instanceof StructType s && value instanceof Map<?, ?> map) {
            Object[] fields = new Object[s.size()];
            for (int i = 0; i < fields.length; i++) {
                StructField f = s.fields()[i];
                fields[i] = convert(map.get(f.name()), f.dataType(), key, where + "." + f.name());
            }
            return new GenericInternalRow(fields);
        }
        if (type instanceof BinaryType && value instanceof String) {
            throw wrong(key, where, value, "binary (a Spark binary column is stored as its base64 text: read it as "
                    + "string and unbase64 it)");
        }
        throw wrong(key, where, value, type.simpleString());
    }

    /**
     * A decimal's text as the writer stores it: ASCII digits with an
     * optional sign and point, no exponent, and no longer than the type's
     * precision allows (so a hostile "1e30000000" costs nothing to refuse).
     */
    private static BigDecimal parse(String digits, DecimalType type) {
        if (digits.length() > type.precision() + 3 || !digits.matches("-?[0-9]+(\\.[0-9]+)?")) {
            return null;
        }
        return new BigDecimal(digits);
    }

    private static IllegalArgumentException wrong(Object key, String where, Object value, String wanted) {
        String shown = key instanceof String s ? "\"" + s + "\"" : "of " + ((byte[]) key).length + " bytes";
        String kind = value instanceof String ? "a string" : value instanceof byte[] ? "bytes"
                : value instanceof Long || value instanceof BigInteger ? "an integer"
                : value instanceof Double ? "a float" : value instanceof Boolean ? "a boolean"
                : value instanceof List ? "a list" : value instanceof Map ? "a map" : value.getClass().getName();
        return new IllegalArgumentException("key " + shown + ": " + where + " is " + kind + ", which does not read as "
                + wanted);
    }
}
