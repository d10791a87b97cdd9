//! The one small database interface the task records run on (issue 23 item 3): the same
//! statements over the gateway's SQLite file or, in a fleet, over the shared PostgreSQL store.
//!
//! Owns [`Db`] (execute a statement, read rows — object-safe, so a write is one closure for
//! both engines), the values that cross it ([`Val`], [`DbRow`], [`ToVal`], [`FromVal`], the
//! `dbp!` macro) and the translation of the portable SQL subset to PostgreSQL:
//! `?N` (and bare `?`) placeholders become `$N` outside string literals; everything else is
//! written once in what both engines accept (`COALESCE`, `ON CONFLICT … DO NOTHING`, row value
//! comparisons, a `rowid` column that the PostgreSQL tables declare themselves). A statement
//! that cannot be portable asks [`Db::engine`] and carries one body per engine.
//!
//! Errors travel as `rusqlite::Error` so the callers' `?` and `.optional()` stay as they were:
//! a PostgreSQL failure rides inside as [`PgFailure`] and
//! [`sqlite_error`](super::sqlite_error) maps it back (`STORE_UNAVAILABLE` for a lost
//! connection). It never logs and never formats a value into SQL (values are always bound).

/// Which engine a [`Db`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    Sqlite,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only built with the feature
    Postgres,
}

/// One bound or read value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A value that can be bound.
pub(crate) trait ToVal {
    fn to_val(&self) -> Val;
}

impl ToVal for Val {
    fn to_val(&self) -> Val {
        self.clone()
    }
}
impl ToVal for str {
    fn to_val(&self) -> Val {
        Val::Text(self.to_string())
    }
}
impl ToVal for String {
    fn to_val(&self) -> Val {
        Val::Text(self.clone())
    }
}
impl ToVal for [u8] {
    fn to_val(&self) -> Val {
        Val::Blob(self.to_vec())
    }
}
impl ToVal for Vec<u8> {
    fn to_val(&self) -> Val {
        Val::Blob(self.clone())
    }
}
impl ToVal for bool {
    fn to_val(&self) -> Val {
        Val::Int(i64::from(*self))
    }
}
impl ToVal for f64 {
    fn to_val(&self) -> Val {
        Val::Real(*self)
    }
}
macro_rules! int_to_val {
    ($($t:ty),*) => {$(
        impl ToVal for $t {
            fn to_val(&self) -> Val {
                Val::Int(i64::from(*self))
            }
        }
    )*};
}
int_to_val!(i8, i16, i32, i64, u8, u16, u32);
impl ToVal for usize {
    fn to_val(&self) -> Val {
        Val::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}
impl ToVal for u64 {
    fn to_val(&self) -> Val {
        Val::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}
impl<T: ToVal> ToVal for Option<T> {
    fn to_val(&self) -> Val {
        self.as_ref().map_or(Val::Null, ToVal::to_val)
    }
}
impl<T: ToVal + ?Sized> ToVal for &T {
    fn to_val(&self) -> Val {
        (**self).to_val()
    }
}

/// The bound values of one statement: `dbp![a, b, c]` is `&[Val]`.
macro_rules! dbp {
    () => { &[] as &[$crate::store::db::Val] };
    ($($v:expr),+ $(,)?) => {
        &[$($crate::store::db::ToVal::to_val(&$v)),+] as &[$crate::store::db::Val]
    };
}
pub(crate) use dbp;

/// A read value converted to a Rust type (`InvalidColumnType`-like error when it does not fit).
pub(crate) trait FromVal: Sized {
    fn from_val(v: &Val) -> Option<Self>;
}

impl FromVal for Val {
    fn from_val(v: &Val) -> Option<Self> {
        Some(v.clone())
    }
}
impl FromVal for String {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}
impl FromVal for Vec<u8> {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Blob(b) => Some(b.clone()),
            Val::Text(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        }
    }
}
impl FromVal for bool {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Int(i) => Some(*i != 0),
            _ => None,
        }
    }
}
impl FromVal for f64 {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Real(f) => Some(*f),
            #[allow(clippy::cast_precision_loss)] // reason: an integer column read as a real
            Val::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}
macro_rules! int_from_val {
    ($($t:ty),*) => {$(
        impl FromVal for $t {
            fn from_val(v: &Val) -> Option<Self> {
                match v {
                    Val::Int(i) => <$t>::try_from(*i).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
int_from_val!(i32, i64, u32, u64, usize);
impl<T: FromVal> FromVal for Option<T> {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Null => Some(None),
            v => T::from_val(v).map(Some),
        }
    }
}

/// One read row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DbRow(pub(crate) Vec<Val>);

impl DbRow {
    /// Column `i` as a `T`: an error (never a panic) when it is missing or does not fit.
    pub(crate) fn get<T: FromVal>(&self, i: usize) -> rusqlite::Result<T> {
        let v = self
            .0
            .get(i)
            .ok_or(rusqlite::Error::InvalidColumnIndex(i))?;
        T::from_val(v).ok_or(rusqlite::Error::InvalidColumnType(
            i,
            String::new(),
            match v {
                Val::Null => rusqlite::types::Type::Null,
                Val::Int(_) => rusqlite::types::Type::Integer,
                Val::Real(_) => rusqlite::types::Type::Real,
                Val::Text(_) => rusqlite::types::Type::Text,
                Val::Blob(_) => rusqlite::types::Type::Blob,
            },
        ))
    }
}

/// A connection or transaction of either engine.
pub(crate) trait Db {
    /// The engine, for the few statements that need one body per engine.
    fn engine(&self) -> Engine;
    /// Runs one statement; the number of rows it changed.
    fn execute(&self, sql: &str, params: &[Val]) -> rusqlite::Result<usize>;
    /// Runs one query; every row it returned.
    fn query(&self, sql: &str, params: &[Val]) -> rusqlite::Result<Vec<DbRow>>;
    /// Runs statements without parameters or results (savepoints).
    fn batch(&self, sql: &str) -> rusqlite::Result<()>;
    /// The fleet process this connection writes for (its liveness row id in the shared
    /// store), recorded as the owner of the tasks and requests it starts; `None` on SQLite.
    fn process(&self) -> Option<&str> {
        None
    }
}

impl dyn Db + '_ {
    /// The first row mapped by `f`; `QueryReturnedNoRows` when there is none (`.optional()`).
    pub(crate) fn query_row<T>(
        &self,
        sql: &str,
        params: &[Val],
        f: impl FnOnce(&DbRow) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let rows = self.query(sql, params)?;
        match rows.first() {
            Some(r) => f(r),
            None => Err(rusqlite::Error::QueryReturnedNoRows),
        }
    }

    /// Every row mapped by `f`.
    pub(crate) fn query_map<T>(
        &self,
        sql: &str,
        params: &[Val],
        f: impl FnMut(&DbRow) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        self.query(sql, params)?.iter().map(f).collect()
    }
}

fn sqlite_params(params: &[Val]) -> Vec<rusqlite::types::Value> {
    params
        .iter()
        .map(|v| match v {
            Val::Null => rusqlite::types::Value::Null,
            Val::Int(i) => rusqlite::types::Value::Integer(*i),
            Val::Real(f) => rusqlite::types::Value::Real(*f),
            Val::Text(s) => rusqlite::types::Value::Text(s.clone()),
            Val::Blob(b) => rusqlite::types::Value::Blob(b.clone()),
        })
        .collect()
}

impl Db for rusqlite::Connection {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Val]) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(sqlite_params(params)))
    }

    fn query(&self, sql: &str, params: &[Val]) -> rusqlite::Result<Vec<DbRow>> {
        let mut st = self.prepare_cached(sql)?;
        let n = st.column_count();
        let rows = st.query_map(rusqlite::params_from_iter(sqlite_params(params)), |r| {
            (0..n)
                .map(|i| {
                    Ok(match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => Val::Null,
                        rusqlite::types::ValueRef::Integer(i) => Val::Int(i),
                        rusqlite::types::ValueRef::Real(f) => Val::Real(f),
                        rusqlite::types::ValueRef::Text(t) => {
                            Val::Text(String::from_utf8_lossy(t).into_owned())
                        }
                        rusqlite::types::ValueRef::Blob(b) => Val::Blob(b.to_vec()),
                    })
                })
                .collect::<rusqlite::Result<Vec<Val>>>()
                .map(DbRow)
        })?;
        rows.collect()
    }

    fn batch(&self, sql: &str) -> rusqlite::Result<()> {
        self.prepare_cached(sql)?.execute([]).map(|_| ())
    }
}

impl Db for rusqlite::Transaction<'_> {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }
    fn execute(&self, sql: &str, params: &[Val]) -> rusqlite::Result<usize> {
        Db::execute(&**self, sql, params)
    }
    fn query(&self, sql: &str, params: &[Val]) -> rusqlite::Result<Vec<DbRow>> {
        Db::query(&**self, sql, params)
    }
    fn batch(&self, sql: &str) -> rusqlite::Result<()> {
        Db::batch(&**self, sql)
    }
}

/// `sql` with its `?N` and bare `?` placeholders as PostgreSQL's `$N` (string literals and
/// quoted identifiers are copied as they are).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: used by the PostgreSQL engine and tests
pub(crate) fn to_pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut next = 0u32;
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                if digits.is_empty() {
                    next += 1;
                    digits = next.to_string();
                } else if let Ok(n) = digits.parse::<u32>() {
                    next = next.max(n);
                }
                out.push('$');
                out.push_str(&digits);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(feature = "postgres")]
pub(crate) use pg_impl::{PgDb, PgFailure, Statements};

#[cfg(feature = "postgres")]
mod pg_impl {
    use super::{to_pg_sql, Db, DbRow, Engine, Val};
    use postgres::types::{IsNull, ToSql, Type};
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// The most statements one connection keeps prepared (the records' SQL is a fixed set;
    /// past this the cache starts over).
    const MAX_STATEMENTS: usize = 512;

    /// The statements prepared on one connection, by their SQL (as the records wrote it).
    #[derive(Default)]
    pub(crate) struct Statements(HashMap<String, postgres::Statement>);

    impl Statements {
        /// Forgets every statement (its connection is gone).
        pub(crate) fn clear(&mut self) {
            self.0.clear();
        }
    }

    /// A PostgreSQL transaction as a [`Db`].
    pub(crate) struct PgDb<'a, 'b> {
        tx: RefCell<&'a mut postgres::Transaction<'b>>,
        process: Option<&'a str>,
        statements: RefCell<&'a mut Statements>,
    }

    impl<'a, 'b> PgDb<'a, 'b> {
        /// `tx` as a [`Db`] writing for fleet process `process`, preparing each statement once
        /// per connection (`statements`: that connection's).
        pub(crate) fn new(
            tx: &'a mut postgres::Transaction<'b>,
            process: Option<&'a str>,
            statements: &'a mut Statements,
        ) -> Self {
            PgDb {
                tx: RefCell::new(tx),
                process,
                statements: RefCell::new(statements),
            }
        }

        fn statement(&self, sql: &str) -> rusqlite::Result<postgres::Statement> {
            let mut cache = self.statements.borrow_mut();
            if let Some(st) = cache.0.get(sql) {
                return Ok(st.clone());
            }
            let st = self
                .tx
                .borrow_mut()
                .prepare(&to_pg_sql(sql))
                .map_err(carry)?;
            if cache.0.len() >= MAX_STATEMENTS {
                cache.0.clear();
            }
            cache.0.insert(sql.to_string(), st.clone());
            Ok(st)
        }
    }

    /// A PostgreSQL failure inside a `rusqlite::Error` (mapped back by `sqlite_error`).
    #[derive(Debug)]
    pub(crate) struct PgFailure(pub(crate) postgres::Error);

    impl std::fmt::Display for PgFailure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            // Never the server's message: it may quote a value.
            match self.0.code() {
                Some(c) => write!(f, "PostgreSQL SQLSTATE {}", c.code()),
                None => f.write_str("PostgreSQL connection failure"),
            }
        }
    }

    impl std::error::Error for PgFailure {}

    fn carry(e: postgres::Error) -> rusqlite::Error {
        rusqlite::Error::ToSqlConversionFailure(Box::new(PgFailure(e)))
    }

    impl ToSql for Val {
        fn to_sql(
            &self,
            ty: &Type,
            out: &mut postgres::types::private::BytesMut,
        ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
            // A value fits the parameter type PostgreSQL inferred from the statement.
            match self {
                Val::Null => Ok(IsNull::Yes),
                Val::Int(i) => match *ty {
                    Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                    Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                    Type::BOOL => (*i != 0).to_sql(ty, out),
                    #[allow(clippy::cast_precision_loss)] // reason: an integer bound to a real
                    Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                    Type::TEXT | Type::VARCHAR => i.to_string().to_sql(ty, out),
                    _ => i.to_sql(ty, out),
                },
                Val::Real(f) => f.to_sql(ty, out),
                // JSON bound as text: jsonb's binary form is a version byte and the text.
                Val::Text(s) if *ty == Type::JSONB => {
                    out.extend_from_slice(&[1]);
                    out.extend_from_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                Val::Text(s) if *ty == Type::JSON => {
                    out.extend_from_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                Val::Text(s) => s.as_str().to_sql(ty, out),
                Val::Blob(b) => b.to_sql(ty, out),
            }
        }

        fn accepts(_: &Type) -> bool {
            true
        }

        postgres::types::to_sql_checked!();
    }

    fn read(row: &postgres::Row) -> rusqlite::Result<DbRow> {
        let mut out = Vec::with_capacity(row.len());
        for (i, col) in row.columns().iter().enumerate() {
            let v = match *col.type_() {
                Type::INT2 => row.try_get::<_, Option<i16>>(i).map(|v| v.map(i64::from)),
                Type::INT4 => row.try_get::<_, Option<i32>>(i).map(|v| v.map(i64::from)),
                Type::INT8 => row.try_get::<_, Option<i64>>(i),
                Type::BOOL => row.try_get::<_, Option<bool>>(i).map(|v| v.map(i64::from)),
                Type::FLOAT4 | Type::FLOAT8 => {
                    let v = if *col.type_() == Type::FLOAT4 {
                        row.try_get::<_, Option<f32>>(i).map(|v| v.map(f64::from))
                    } else {
                        row.try_get::<_, Option<f64>>(i)
                    };
                    out.push(v.map_err(carry)?.map_or(Val::Null, Val::Real));
                    continue;
                }
                Type::BYTEA => {
                    let v = row.try_get::<_, Option<Vec<u8>>>(i).map_err(carry)?;
                    out.push(v.map_or(Val::Null, Val::Blob));
                    continue;
                }
                _ => {
                    let v = row.try_get::<_, Option<String>>(i).map_err(carry)?;
                    out.push(v.map_or(Val::Null, Val::Text));
                    continue;
                }
            };
            out.push(v.map_err(carry)?.map_or(Val::Null, Val::Int));
        }
        Ok(DbRow(out))
    }

    fn refs(params: &[Val]) -> Vec<&(dyn ToSql + Sync)> {
        params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
    }

    impl Db for PgDb<'_, '_> {
        fn engine(&self) -> Engine {
            Engine::Postgres
        }

        fn execute(&self, sql: &str, params: &[Val]) -> rusqlite::Result<usize> {
            let st = self.statement(sql)?;
            let n = self
                .tx
                .borrow_mut()
                .execute(&st, &refs(params))
                .map_err(carry)?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        }

        fn query(&self, sql: &str, params: &[Val]) -> rusqlite::Result<Vec<DbRow>> {
            let st = self.statement(sql)?;
            let rows = self
                .tx
                .borrow_mut()
                .query(&st, &refs(params))
                .map_err(carry)?;
            rows.iter().map(read).collect()
        }

        fn batch(&self, sql: &str) -> rusqlite::Result<()> {
            self.tx.borrow_mut().batch_execute(sql).map_err(carry)
        }

        fn process(&self) -> Option<&str> {
            self.process
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_outside_literals() {
        assert_eq!(
            to_pg_sql("SELECT ?1, '?2', \"a?\", ?10 WHERE x = ? AND y = ?"),
            "SELECT $1, '?2', \"a?\", $10 WHERE x = $11 AND y = $12"
        );
        assert_eq!(to_pg_sql("a = ? AND b = ?"), "a = $1 AND b = $2");
    }

    #[test]
    fn rows_convert_without_panics() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let db: &dyn Db = &c;
        db.batch("CREATE TABLE t (a INTEGER, b TEXT, c BLOB)")
            .unwrap();
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3)",
            dbp![7u32, "x", vec![1u8]],
        )
        .unwrap();
        let (a, b, c): (u32, Option<String>, Vec<u8>) = db
            .query_row("SELECT a, b, c FROM t", dbp![], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!((a, b.as_deref(), c), (7, Some("x"), vec![1]));
        let bad = db.query_row("SELECT b FROM t", dbp![], |r| r.get::<i64>(0));
        assert!(bad.is_err());
        let none = db.query_row("SELECT a FROM t WHERE a = 0", dbp![], |r| r.get::<i64>(0));
        assert!(matches!(none, Err(rusqlite::Error::QueryReturnedNoRows)));
    }
}
