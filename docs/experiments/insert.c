// An enqueue's statements from C, on the outbox's own schema: each one timed inside one transaction
// at synchronous=NORMAL (issue 11, BENCHMARKS.md "Enqueue against the disk"). In a scratch folder
// on the disk: formsync outbox inspect ob.db --create > /dev/null; gcc -O2 -o insert insert.c
// -lsqlite3 && ./insert 1981 0 (payload bytes; 0 = the id past deleted ones as the outbox
// computes it, 1 = SQLite's own next rowid). The commit column includes SQLite's own
// checkpoints (the outbox runs them on another connection) and is not comparable.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static void ex(sqlite3*db,const char*s){char*e=0;if(sqlite3_exec(db,s,0,0,&e)){fprintf(stderr,"%s: %s\n",s,e);exit(1);}}
static char payload[4096]; static int plen;
static const char*INS_SUB="INSERT INTO items (id, kind, workspace, lane, document_id, attempt_id, form, form_version, payload, base_payload, base_version, produces, file_path, content_type, byte_count, sha256, state, next_attempt_at, created_at, updated_at, endpoint, last_error) VALUES (MAX(COALESCE((SELECT MAX(id) FROM items), 0), COALESCE((SELECT value FROM outbox_counters WHERE name = 'items'), 0)) + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
static const char*INS_NULL="INSERT INTO items (id, kind, workspace, lane, document_id, attempt_id, form, form_version, payload, base_payload, base_version, produces, file_path, content_type, byte_count, sha256, state, next_attempt_at, created_at, updated_at, endpoint, last_error) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
int main(int argc,char**argv){plen=atoi(argv[1]);int variant=atoi(argv[2]);memset(payload,'x',plen);
 system("rm -f exp_ins.db*; cp ob.db exp_ins.db");
 sqlite3*db;sqlite3_open("exp_ins.db",&db);ex(db,"PRAGMA journal_mode=WAL");ex(db,"PRAGMA synchronous=NORMAL");ex(db,"PRAGMA foreign_keys=ON");
 sqlite3_stmt*ins,*doc,*lane,*b,*c;
 sqlite3_prepare_v3(db,variant==1?INS_NULL:INS_SUB,-1,1,&ins,0);
 sqlite3_prepare_v3(db,"INSERT OR REPLACE INTO documents (workspace, document_id, digest, item_id) VALUES (?, ?, ?, ?)",-1,1,&doc,0);
 sqlite3_prepare_v3(db,"INSERT OR IGNORE INTO lanes (workspace, lane, head, due_at) VALUES (?, ?, ?, ?)",-1,1,&lane,0);
 sqlite3_prepare_v3(db,"BEGIN IMMEDIATE",-1,1,&b,0);sqlite3_prepare_v3(db,"COMMIT",-1,1,&c,0);
 double tb=0,ti=0,td=0,tl=0,tc=0;int N=3000,W=1000;char docid[64],lanename[64];unsigned char dig[32];
 for(int n=0;n<N+W;n++){
  double t0=now();sqlite3_step(b);sqlite3_reset(b);double t1=now();
  sprintf(docid,"0190%08x-aaaa-7bbb-8ccc-%012d",n,n);sprintf(lanename,"customer_id:%d",n%100+1);
  int k=1;sqlite3_bind_text(ins,k++,"submission",-1,SQLITE_TRANSIENT);sqlite3_bind_text(ins,k++,"bench",-1,SQLITE_TRANSIENT);sqlite3_bind_text(ins,k++,lanename,-1,SQLITE_TRANSIENT);
  sqlite3_bind_text(ins,k++,docid,-1,SQLITE_TRANSIENT);sqlite3_bind_text(ins,k++,docid,-1,SQLITE_TRANSIENT);sqlite3_bind_text(ins,k++,"SalesOrder",-1,SQLITE_TRANSIENT);sqlite3_bind_int64(ins,k++,1);
  sqlite3_bind_blob(ins,k++,payload,plen,SQLITE_TRANSIENT);sqlite3_bind_null(ins,k++);sqlite3_bind_null(ins,k++);sqlite3_bind_null(ins,k++);sqlite3_bind_null(ins,k++);sqlite3_bind_null(ins,k++);sqlite3_bind_null(ins,k++);sqlite3_bind_null(ins,k++);
  sqlite3_bind_text(ins,k++,"pending",-1,SQLITE_TRANSIENT);sqlite3_bind_int64(ins,k++,1764547200000+n);sqlite3_bind_int64(ins,k++,1764547200000+n);sqlite3_bind_int64(ins,k++,1764547200000+n);sqlite3_bind_text(ins,k++,"/sales-orders",-1,SQLITE_TRANSIENT);sqlite3_bind_null(ins,k++);
  if(sqlite3_step(ins)!=SQLITE_DONE){fprintf(stderr,"ins %s\n",sqlite3_errmsg(db));return 1;}sqlite3_reset(ins);long long id=sqlite3_last_insert_rowid(db);double t2=now();
  for(int i=0;i<32;i++)dig[i]=rand();sqlite3_bind_text(doc,1,"bench",-1,SQLITE_TRANSIENT);sqlite3_bind_text(doc,2,docid,-1,SQLITE_TRANSIENT);sqlite3_bind_blob(doc,3,dig,32,SQLITE_TRANSIENT);sqlite3_bind_int64(doc,4,id);sqlite3_step(doc);sqlite3_reset(doc);double t3=now();
  sqlite3_bind_text(lane,1,"bench",-1,SQLITE_TRANSIENT);sqlite3_bind_text(lane,2,lanename,-1,SQLITE_TRANSIENT);sqlite3_bind_int64(lane,3,id);sqlite3_bind_int64(lane,4,1);sqlite3_step(lane);sqlite3_reset(lane);double t4=now();
  sqlite3_step(c);sqlite3_reset(c);double t5=now();
  if(n>=W){tb+=t1-t0;ti+=t2-t1;td+=t3-t2;tl+=t4-t3;tc+=t5-t4;}
 }
 printf("payload %d variant %d: begin %.1f insert %.1f document %.1f lane %.1f commit %.1f us\n",plen,variant,tb/N,ti/N,td/N,tl/N,tc/N);
}
