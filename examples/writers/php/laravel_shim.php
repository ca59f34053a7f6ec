<?php
// A stand-in for the few pieces of Laravel that laravel.php uses (no
// Laravel is installed here: the test runs the snippet as written on
// PDO). It behaves as Laravel does where the snippet can tell: a
// transaction that throws is rolled back and the exception rethrown,
// create() inserts the given attributes and returns the model (with its
// new id for an incrementing key: lastInsertId, or RETURNING id on
// PostgreSQL), a date is written as 'Y-m-d H:i:s' in the application's
// time zone, and update() returns the number of rows changed.

namespace Illuminate\Support\Facades {
    final class DB
    {
        public static \PDO $pdo;

        public static function transaction(callable $work): mixed
        {
            self::$pdo->beginTransaction();
            try {
                $result = $work();
                self::$pdo->commit();
                return $result;
            } catch (\Throwable $e) {
                self::$pdo->rollBack();
                throw $e;
            }
        }
    }
}

namespace Illuminate\Support {
    final class Str
    {
        public static function uuid(): string
        {
            $b = random_bytes(16);
            $b[6] = chr(ord($b[6]) & 0x0f | 0x40);
            $b[8] = chr(ord($b[8]) & 0x3f | 0x80);
            return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
        }
    }
}

namespace Illuminate\Database\Eloquent {
    use Illuminate\Support\Facades\DB;

    abstract class Model
    {
        protected $table;
        public $incrementing = true;
        protected $keyType = 'int';
        public $timestamps = true;
        protected $guarded = ['*'];
        protected array $attributes = [];

        public function __get(string $name): mixed
        {
            return $this->attributes[$name] ?? null;
        }

        public static function create(array $attributes): static
        {
            $model = new static();
            $values = array_map(fn ($v) => $v instanceof \DateTimeInterface ? $v->format('Y-m-d H:i:s') : $v, $attributes);
            $sql = sprintf('INSERT INTO %s (%s) VALUES (%s)', $model->table, implode(', ', array_keys($values)),
                implode(', ', array_fill(0, count($values), '?')));
            $postgres = DB::$pdo->getAttribute(\PDO::ATTR_DRIVER_NAME) === 'pgsql';
            if ($model->incrementing && $postgres) {
                $sql .= ' RETURNING id';
            }
            $st = DB::$pdo->prepare($sql);
            $st->execute(array_values($values));
            $model->attributes = $attributes;
            if ($model->incrementing) {
                $model->attributes['id'] = (int) ($postgres ? $st->fetchColumn() : DB::$pdo->lastInsertId());
            }
            return $model;
        }

        public static function where(string $column, mixed $value): Builder
        {
            return (new Builder((new static())->table))->where($column, $value);
        }
    }

    final class Builder
    {
        private array $wheres = [];

        public function __construct(private string $table) {}

        public function where(string $column, mixed $value): self
        {
            $this->wheres[$column] = $value;
            return $this;
        }

        public function update(array $values): int
        {
            $set = implode(', ', array_map(fn ($c) => "$c = ?", array_keys($values)));
            $where = implode(' AND ', array_map(fn ($c) => "$c = ?", array_keys($this->wheres)));
            $st = DB::$pdo->prepare("UPDATE {$this->table} SET $set WHERE $where");
            $st->execute([...array_values($values), ...array_values($this->wheres)]);
            return $st->rowCount();
        }
    }
}

namespace {
    function now(): \DateTimeImmutable
    {
        return new \DateTimeImmutable('now'); // the application's time zone (config app.timezone)
    }
}
